/* bench/cutlass_probe/inst.h: one CUTLASS 3.x SM90 GEMM (bf16 TN, f32 accumulation) per
 * template instance, built with CUTLASS's collective builders; the runtime knobs of its tile
 * scheduler (swizzle, raster order, stream-K splits) come in probe_args. See build.sh. */
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/gemm/kernel/tile_scheduler.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/util/packed_stride.hpp>
#include <cuda_runtime.h>
using namespace cute;
using EA = cutlass::bfloat16_t;
struct probe_args { int m, n, k; const void *a, *b; void *d; int swz, raster; int splits; };
template <class TileShape, class ClusterShape, class KSched, class ESched, class TSched>
struct Inst {
  using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      EA, cutlass::layout::ColumnMajor, 8, EA, cutlass::layout::ColumnMajor, 8, ESched>::CollectiveOp;
  using Main = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      EA, cutlass::layout::RowMajor, 8, EA, cutlass::layout::ColumnMajor, 8, float,
      TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epi::SharedStorage))>,
      KSched>::CollectiveOp;
  using Kern = cutlass::gemm::kernel::GemmUniversal<Shape<int,int,int,int>, Main, Epi, TSched>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kern>;
  static int run(const probe_args &p, void *ws, size_t wsn, cudaStream_t s) {
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {p.m, p.n, p.k, 1},
      {(const EA*)p.a, cutlass::make_cute_packed_stride(typename Kern::StrideA{}, {p.m, p.k, 1}),
       (const EA*)p.b, cutlass::make_cute_packed_stride(typename Kern::StrideB{}, {p.n, p.k, 1})},
      {{1.0f, 0.0f}, (const EA*)p.d, cutlass::make_cute_packed_stride(typename Kern::StrideC{}, {p.m, p.n, 1}),
       (EA*)p.d, cutlass::make_cute_packed_stride(typename Kern::StrideD{}, {p.m, p.n, 1})}};
    args.scheduler.max_swizzle_size = p.swz;
    using RO = cutlass::gemm::kernel::detail::RasterOrderOptions;
    args.scheduler.raster_order = p.raster == 0 ? RO::Heuristic : p.raster == 1 ? RO::AlongM : RO::AlongN;
    if constexpr (cute::is_same_v<TSched, cutlass::gemm::StreamKScheduler>) {
      if (p.splits > 1) { args.scheduler.splits = p.splits;
        args.scheduler.decomposition_mode = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90StreamKParams::DecompositionMode::SplitK; }
    }
    Gemm g;
    if (g.can_implement(args) != cutlass::Status::kSuccess) return 1;
    if (Gemm::get_workspace_size(args) > wsn) return 4;
    if (g.initialize(args, ws, s) != cutlass::Status::kSuccess) return 2;
    return g.run(s) != cutlass::Status::kSuccess ? 3 : 0;
  }
};
using Coop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using PP = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using ECoop = cutlass::epilogue::TmaWarpSpecializedCooperative;
using EPP = cutlass::epilogue::TmaWarpSpecialized;
using Pers = cutlass::gemm::PersistentScheduler;
using SK = cutlass::gemm::StreamKScheduler;
typedef int (*probe_fn)(const probe_args &, void *, size_t, cudaStream_t);
struct probe_inst { const char *name; probe_fn fn; };
