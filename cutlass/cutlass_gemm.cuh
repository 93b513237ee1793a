/* cutlass_gemm.cuh: one kernel of libgemmtune_cutlass (gt_cutlass.h) per template instance,
 * from CUTLASS's SM90 collective builders: a TMA warp-specialized main loop, a TMA epilogue,
 * the persistent or stream-K tile scheduler. Included by the cutlass_k*.cu files, which
 * instantiate it (several translation units: they compile in parallel). */
#pragma once
#include <cstdio>
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/gemm/kernel/tile_scheduler.hpp>

#include "gt_cutlass.h"

namespace gt_cutlass {
using namespace cute;
using Coop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using PingPong = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using Persistent = cutlass::gemm::PersistentScheduler;
using StreamK = cutlass::gemm::StreamKScheduler;

/* the epilogue schedule that goes with a main loop's */
template <class K> struct EpiOf { using type = cutlass::epilogue::TmaWarpSpecializedCooperative; };
template <> struct EpiOf<PingPong> { using type = cutlass::epilogue::TmaWarpSpecialized; };

typedef int (*check_fn)(const gt_cutlass_args *, size_t *, char *, size_t);
typedef int (*run_fn)(const gt_cutlass_args *, void *, size_t, void *, char *, size_t);
struct entry {
    gt_cutlass_kernel k;
    check_fn check;
    run_fn run;
};

/* args->sms when given, else the current device's: CUTLASS would ask the device itself and
 * divide by its count, by zero on a machine without one */
static inline int resolve_sms(gt_cutlass_args *a, char *err, size_t errlen)
{
    int dev = 0;
    if (a->sms > 0)
        return 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&a->sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || a->sms <= 0) {
        cudaGetLastError();
        snprintf(err, errlen, "no CUDA device to size the grid by (gt_cutlass_args.sms not given)");
        return 6;
    }
    return 0;
}

template <class T, class Tile, class Cluster, class KSched, class TSched> struct Gemm {
    using EpiSched = typename EpiOf<KSched>::type;
    static constexpr int kAlign = 16 / sizeof(T); /* TMA: 16-byte rows */
    using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, T, cutlass::layout::ColumnMajor,
        kAlign, T, cutlass::layout::ColumnMajor, kAlign, EpiSched>::CollectiveOp;
    using Main = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, cutlass::layout::RowMajor, kAlign, T,
        cutlass::layout::ColumnMajor, kAlign, float, Tile, Cluster,
        cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epi::SharedStorage))>,
        KSched>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Main, Epi, TSched>;
    using Op = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

    /* CUTLASS 3's views: A (m, k) with k contiguous (lda between rows), B (n, k) with k
     * contiguous (ldb), D (m, n) with m contiguous (ldd); no batch. */
    static typename Op::Arguments args_of(const gt_cutlass_args *a)
    {
        typename Kernel::StrideA sa{};
        typename Kernel::StrideB sb{};
        typename Kernel::StrideC sc{};
        typename Kernel::StrideD sd{};
        cute::get<0>(sa) = a->lda;
        cute::get<0>(sb) = a->ldb;
        cute::get<1>(sc) = a->ldd;
        cute::get<1>(sd) = a->ldd;
        typename Op::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                    {a->m, a->n, a->k, 1},
                                    {(const T *)a->a, sa, (const T *)a->b, sb},
                                    {{a->alpha, 0.0f}, (const T *)a->d, sc, (T *)a->d, sd}};
        args.hw_info.sm_count = a->sms;
        args.scheduler.max_swizzle_size = a->swizzle;
        using RO = cutlass::gemm::kernel::detail::RasterOrderOptions;
        args.scheduler.raster_order = a->raster == 1 ? RO::AlongM : a->raster == 2 ? RO::AlongN : RO::Heuristic;
        if constexpr (cute::is_same_v<TSched, StreamK>) {
            if (a->splits > 1) {
                args.scheduler.splits = a->splits;
                args.scheduler.decomposition_mode =
                    cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90StreamKParams::DecompositionMode::SplitK;
            }
        }
        return args;
    }

    /* what CUTLASS does not check itself: the knobs, and leading dimensions that cover a row */
    static int knobs(const gt_cutlass_args *a, char *err, size_t errlen)
    {
        int sw = a->swizzle;
        if (sw != 1 && sw != 2 && sw != 4 && sw != 8) {
            snprintf(err, errlen, "swizzle %d: one of 1, 2, 4, 8", sw);
            return 1;
        }
        if (a->raster < 0 || a->raster > 2) {
            snprintf(err, errlen, "raster %d: 0 (heuristic), 1 (along M) or 2 (along N)", a->raster);
            return 1;
        }
        if (a->splits < 1 || a->splits > 16 || (a->splits > 1 && !cute::is_same_v<TSched, StreamK>)) {
            snprintf(err, errlen, "splits %d: 1, or 2-16 with the stream-K scheduler", a->splits);
            return 1;
        }
        if (a->m < 1 || a->n < 1 || a->k < 1 || a->lda < a->k || a->ldb < a->k || a->ldd < a->m) {
            snprintf(err, errlen, "sizes %dx%dx%d with lda %lld, ldb %lld, ldd %lld", a->m, a->n, a->k,
                     a->lda, a->ldb, a->ldd);
            return 1;
        }
        return 0;
    }

    static int check(const gt_cutlass_args *in, size_t *ws, char *err, size_t errlen)
    {
        if (knobs(in, err, errlen))
            return 1;
        gt_cutlass_args a1 = *in;
        if (resolve_sms(&a1, err, errlen))
            return 6;
        typename Op::Arguments args = args_of(&a1);
        cutlass::Status s = Op::can_implement(args);
        if (s != cutlass::Status::kSuccess) {
            snprintf(err, errlen, "CUTLASS cannot run it: %s (its operands need %d-element alignment)",
                     cutlassGetStatusString(s), kAlign);
            return 2;
        }
        *ws = Op::get_workspace_size(args);
        return 0;
    }

    static int run(const gt_cutlass_args *a, void *ws, size_t ws_bytes, void *stream, char *err, size_t errlen)
    {
        gt_cutlass_args a1 = *a;
        size_t need = 0;
        if (resolve_sms(&a1, err, errlen))
            return 6;
        int rc = check(&a1, &need, err, errlen);
        if (rc)
            return rc;
        if (need > ws_bytes || (need && !ws)) {
            snprintf(err, errlen, "workspace of %zu bytes, %zu given", need, ws_bytes);
            return 3;
        }
        typename Op::Arguments args = args_of(&a1);
        Op op;
        cutlass::Status s = op.initialize(args, ws, (cudaStream_t)stream);
        if (s == cutlass::Status::kSuccess)
            s = op.run((cudaStream_t)stream);
        if (s != cutlass::Status::kSuccess) {
            snprintf(err, errlen, "CUTLASS: %s", cutlassGetStatusString(s));
            return 4;
        }
        return 0;
    }
};

/* One table entry: its description and its two functions. */
template <class T, int TM, int TN, int CM, int CN, class KSched, class TSched>
entry make(const char *name, const char *types)
{
    using G = Gemm<T, Shape<Int<TM>, Int<TN>, _64>, Shape<Int<CM>, Int<CN>, _1>, KSched, TSched>;
    entry e;
    e.k = {name, types, TM, TN, 64, CM, CN,
           cute::is_same_v<KSched, PingPong> ? "pingpong" : "cooperative",
           cute::is_same_v<TSched, StreamK> ? "streamk" : "persistent"};
    e.check = G::check;
    e.run = G::run;
    return e;
}
} // namespace gt_cutlass
