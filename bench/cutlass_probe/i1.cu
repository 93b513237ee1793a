#include "inst.h"
probe_inst insts1[] = {
 {"coop_128x256_c2x1", Inst<Shape<_128,_256,_64>, Shape<_2,_1,_1>, Coop, ECoop, Pers>::run},
 {"coop_128x256_c1x2", Inst<Shape<_128,_256,_64>, Shape<_1,_2,_1>, Coop, ECoop, Pers>::run},
 {"coop_256x128_c1x2", Inst<Shape<_256,_128,_64>, Shape<_1,_2,_1>, Coop, ECoop, Pers>::run},
 {"coop_256x128_c2x1", Inst<Shape<_256,_128,_64>, Shape<_2,_1,_1>, Coop, ECoop, Pers>::run},
};
