#include "inst.h"
probe_inst insts2[] = {
 {"coop_128x128_c1x1", Inst<Shape<_128,_128,_64>, Shape<_1,_1,_1>, Coop, ECoop, Pers>::run},
 {"coop_128x128_c2x1", Inst<Shape<_128,_128,_64>, Shape<_2,_1,_1>, Coop, ECoop, Pers>::run},
 {"pp_128x128_c1x1", Inst<Shape<_128,_128,_64>, Shape<_1,_1,_1>, PP, EPP, Pers>::run},
 {"pp_128x128_c2x1", Inst<Shape<_128,_128,_64>, Shape<_2,_1,_1>, PP, EPP, Pers>::run},
};
