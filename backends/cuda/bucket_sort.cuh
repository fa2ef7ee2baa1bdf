// The fold order of one period inside a thread block: (phase, index) pairs
// ascending, the same order as bitonic_sort_n, in a few passes over n.
//
// Phases lie in [0, 1]; with nb <= n buckets, bucket(k) = min(floor(k nb),
// nb - 1) is monotone in the phase, so sorting by bucket and then inside each
// bucket orders the fold. Folded evenly sampled light curves fill n buckets
// almost uniformly (K2/TESS grids: median largest bucket 2, 99th percentile
// 11), so after a histogram, a block scan and a scatter little is left to
// order inside buckets. bucket_sort_n orders each bucket in place: one thread
// per bucket by an insertion sort of a few entries (~6x fewer instructions
// than the bitonic network's log2(n)^2 / 2 steps), a bucket of more than
// SMALL_BUCKET entries ranked by its warp instead (rank_bucket): a period
// near a multiple of the cadence fills buckets of tens, whose quadratic
// insertion sorts by one thread held a whole launch of the global layout
// waiting (78-day curve: one block of 37,000 dependent steps).
// bucket_rank_n, given room for a second index array, ranks every sample
// among its bucket's and writes it there at once: a thread's samples are
// independent, where a thread's buckets were a chain of dependent loads as
// long as the warp's largest bucket (K2-like fold on an H200: the insertion
// sorts took 0.20 of its 0.64 ms, the ranks 0.08). Fewer buckets than
// samples (counts that must fit in shared memory) hold n / nb times as many.
// A fold whose phases crowd into a bucket of more than BUCKET_MAX times that,
// or more than a warp ranks (a period commensurate with the cadence), takes
// the bitonic network instead, so no input costs O(n^2).
#pragma once
#include <cub/block/block_scan.cuh>

#include "phase_scan.cuh"

#define BUCKET_MAX 32
#define SMALL_BUCKET 4  // larger buckets are ranked by a warp
#define RANK_ITEMS 3    // entries per lane of a ranked bucket: at most 96 per bucket (4: pruned_fold spills)
#ifndef BATCH
#define BATCH 4  // samples a thread takes at once in the passes over them
#endif

__device__ __forceinline__ int bucket(double phase, int nb) { return min((int)(phase * nb), nb - 1); }

// A thread's run of ``n`` entries split among the block, odd: the runs' first
// entries, read together, then lie in distinct banks (12 4-byte entries
// apart, lanes 8 apart shared one; a K2-like fold's scans of its 4,320).
__device__ __forceinline__ int odd_run(int n) { return ((n + BLOCK - 1) / BLOCK) | 1; }

// count[b] (b < n) := entries before bucket b, from the bucket sizes in count.
__device__ void exclusive_scan_n(int *count, int n)
{
    typedef cub::BlockScan<int, BLOCK> Scan;
    __shared__ typename Scan::TempStorage scan;
    const int chunk = odd_run(n);
    const int begin = min(n, (int)threadIdx.x * chunk), end = min(n, begin + chunk);
    int run = 0;
    for (int b = begin; b < end; ++b) run += count[b];
    Scan(scan).ExclusiveSum(run, run);
    for (int b = begin; b < end; ++b) {
        const int size = count[b];
        count[b] = run;
        run += size;
    }
    __syncthreads();
}

// Bucket idx[begin .. end) (at most 32 RANK_ITEMS entries) in (phase, index)
// order by the 32 lanes of a warp, which all call it: each entry's rank is
// the count of smaller ones (keys are unique, so the ranks are a permutation).
template <class Phase>
__device__ __forceinline__ void rank_bucket(Phase phase, int *idx, int begin, int end)
{
    const int lane = threadIdx.x % 32, size = end - begin;
    double k[RANK_ITEMS];
    int v[RANK_ITEMS], rank[RANK_ITEMS];
#pragma unroll
    for (int r = 0; r < RANK_ITEMS; ++r) {
        const bool mine = 32 * r + lane < size;
        v[r] = mine ? idx[begin + 32 * r + lane] : 0;
        k[r] = mine ? phase(v[r]) : 0.0;
        rank[r] = 0;
    }
#pragma unroll
    for (int q = 0; q < RANK_ITEMS; ++q)
        for (int src = 0; src < min(32, size - 32 * q); ++src) {
            const double ku = __shfl_sync(0xffffffffu, k[q], src);
            const int u = __shfl_sync(0xffffffffu, v[q], src);
#pragma unroll
            for (int r = 0; r < RANK_ITEMS; ++r) rank[r] += key_less(ku, u, k[r], v[r]);
        }
    __syncwarp();  // every entry read before any is moved
#pragma unroll
    for (int r = 0; r < RANK_ITEMS; ++r)
        if (32 * r + lane < size) idx[begin + rank[r]] = v[r];
    __syncwarp();
}

// visit(i, at) for every sample i, ``at`` its bucket's count before it (the
// atomic's return); returns the largest ``at``. A thread takes BATCH samples
// at a time, their loads, then their atomics, in flight together (one at a
// time, each waited for the last's atomic: a shared store may alias the next
// load).
template <class Phase, class Visit>
__device__ __forceinline__ int count_samples(Phase phase, int n, int *count, int nb, Visit visit)
{
    int most = 0;  // the largest count met
    for (int i0 = threadIdx.x; i0 < n; i0 += BATCH * BLOCK) {
        int b[BATCH], at[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; ++u) b[u] = i0 + u * BLOCK < n ? bucket(phase(i0 + u * BLOCK), nb) : -1;
#pragma unroll
        for (int u = 0; u < BATCH; ++u) at[u] = b[u] >= 0 ? atomicAdd(&count[b[u]], 1) : 0;
#pragma unroll
        for (int u = 0; u < BATCH; ++u) {
            most = max(most, at[u]);
            if (b[u] >= 0) visit(i0 + u * BLOCK, at[u]);
        }
    }
    return most;
}

// count[0 .. nb) := the buckets' sizes, with ``slot`` each sample's place
// among its bucket's in arrival order; true if one holds more than ``crowd``
// entries (the caller then sorts by bitonic_sort_n).
template <class Phase>
__device__ bool bucket_sizes(Phase phase, int n, int *count, int nb, int crowd, unsigned short *slot = nullptr)
{
    __shared__ int crowded;
    if (threadIdx.x == 0) crowded = 0;
    for (int b = threadIdx.x; b < nb; b += BLOCK) count[b] = 0;
    __syncthreads();
    const auto place = [=](int i, int at) {
        if (slot) slot[i] = at;
    };
    if (count_samples(phase, n, count, nb, place) >= crowd) crowded = 1;
    __syncthreads();
    return crowded;
}

// idx := the indices 0 .. n - 1 by bucket (in no order inside one), from the
// buckets' sizes in count; then count[b] is the end of bucket b.
template <class Phase, class Index>
__device__ void bucket_scatter(Phase phase, Index *idx, int n, int *count, int nb)
{
    exclusive_scan_n(count, nb);
    count_samples(phase, n, count, nb, [=](int i, int at) { idx[at] = i; });
    __syncthreads();
}

__device__ __forceinline__ int crowd_of(int n, int nb)
{
    return min(BUCKET_MAX * ((n + nb - 1) / nb), 32 * RANK_ITEMS);
}

// idx[0 .. n) := the indices i of sample phases phase(i) in (phase, i) order.
// phase: an array's reads, or the phase recomputed from the (cached) times,
// which spares a global array of n keys its write and three reads. key: n
// doubles that the crowded fallback fills from phase and sorts. count: nb
// ints of scratch (nb <= n buckets, shared memory where it fits). idx must
// hold 0 .. n - 1 on entry (the fallback sorts it).
template <class Phase>
__device__ void bucket_sort_n(Phase phase, double *key, int *idx, int n, int *count, int nb)
{
    if (bucket_sizes(phase, n, count, nb, crowd_of(n, nb))) {
        for (int i = threadIdx.x; i < n; i += BLOCK) key[i] = phase(i);
        __syncthreads();
        bitonic_sort_n(key, idx, n);
        return;
    }
    bucket_scatter(phase, idx, n, count, nb);
    const int lane = threadIdx.x % 32;
    for (int b = threadIdx.x; b - lane < nb; b += BLOCK) {  // whole warps, for rank_bucket
        const int begin = b < nb && b ? count[b - 1] : 0, end = b < nb ? count[b] : 0;
        const bool small = end - begin <= SMALL_BUCKET;
        for (int a = begin + 1; small && a < end; ++a) {
            const int v = idx[a];
            const double kv = phase(v);
            int c = a;
            for (; c > begin && key_less(kv, v, phase(idx[c - 1]), idx[c - 1]); --c) idx[c] = idx[c - 1];
            idx[c] = v;
        }
        for (unsigned large = __ballot_sync(0xffffffffu, !small); large; large &= large - 1) {
            const int src = __ffs(large) - 1;
            rank_bucket(phase, idx, __shfl_sync(0xffffffffu, begin, src), __shfl_sync(0xffffffffu, end, src));
        }
    }
    __syncthreads();
}

// out := the (phase, i) order of the samples' phases, as bucket_sort_n gives
// it, in 16-bit indices (n < 2^16), phase(i) forming key[i] (the caller's
// lambda stores it: the phases, counted as they are formed). Each sample goes
// to its bucket's start plus its arrival there (``bucket_sizes``' slots, kept
// in out: no second atomic), then is ranked among its bucket's (tmp), read by
// sample, not by place: one dependent load fewer. count: nb ints.
template <class Phase>
__device__ void bucket_rank_n(Phase phase, double *key, unsigned short *tmp, unsigned short *out, int n, int *count,
                              int nb)
{
    if (bucket_sizes(phase, n, count, nb, crowd_of(n, nb), out)) {
        for (int i = threadIdx.x; i < n; i += BLOCK) out[i] = i;
        __syncthreads();
        bitonic_sort_n(key, out, n);
        return;
    }
    exclusive_scan_n(count, nb);  // count[b]: bucket b's start
    const auto start = [&](int b) { return b < nb ? count[b] : n; };
    for (int i0 = threadIdx.x; i0 < n; i0 += BATCH * BLOCK) {
        int b[BATCH], at[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; ++u) {
            const int i = i0 + u * BLOCK;
            b[u] = i < n ? bucket(key[i], nb) : nb;
            at[u] = i < n ? out[i] : 0;
        }
#pragma unroll
        for (int u = 0; u < BATCH; ++u)
            if (b[u] < nb) tmp[count[b[u]] + at[u]] = i0 + u * BLOCK;
    }
    __syncthreads();
    for (int i0 = threadIdx.x; i0 < n; i0 += BATCH * BLOCK) {
        double k[BATCH];
        int begin[BATCH], end[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; ++u) {
            const int i = i0 + u * BLOCK;
            k[u] = i < n ? key[i] : 0.0;
            const int b = i < n ? bucket(k[u], nb) : nb;
            begin[u] = start(b);
            end[u] = start(b + 1);
        }
        int rank[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; ++u) {
            rank[u] = begin[u];
            for (int c = begin[u]; end[u] - begin[u] > 1 && c < end[u]; ++c)
                rank[u] += key_less(key[tmp[c]], tmp[c], k[u], i0 + u * BLOCK);
        }
#pragma unroll
        for (int u = 0; u < BATCH; ++u)
            if (i0 + u * BLOCK < n) out[rank[u]] = i0 + u * BLOCK;
    }
    __syncthreads();
}

// The same, phases already in key[0 .. n).
__device__ __forceinline__ void bucket_sort_n(double *key, int *idx, int n, int *count, int nb)
{
    bucket_sort_n([key](int i) { return key[i]; }, key, idx, n, count, nb);
}
