#include "inst.h"
probe_inst insts3[] = {
 {"sk_coop_128x256_c2x1", Inst<Shape<_128,_256,_64>, Shape<_2,_1,_1>, Coop, ECoop, SK>::run},
 {"sk_coop_128x128_c1x1", Inst<Shape<_128,_128,_64>, Shape<_1,_1,_1>, Coop, ECoop, SK>::run},
 {"pp_64x256_c1x1", Inst<Shape<_64,_256,_64>, Shape<_1,_1,_1>, PP, EPP, Pers>::run},
 {"coop_256x128_c1x1", Inst<Shape<_256,_128,_64>, Shape<_1,_1,_1>, Coop, ECoop, Pers>::run},
};
