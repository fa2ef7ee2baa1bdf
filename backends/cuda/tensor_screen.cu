// tensor: TLS's exact statistic with a float16 tensor-core screen
// (backends/implementations/tensor.py; folds in shared memory). Kernels:
// tensor_search (equal weights), tensor_search_w (weights that differ: A2 =
// sum a^2 W varies by shift, formed by a second product of a^2 against the
// folded weights in float16; its terms are all positive, so its error is
// relative to itself). A block of BLOCK threads searches period after period,
// each the next of a queue's (search_queue):
//   fold: bucket_rank_n (bucket_sort.cuh) in shared memory; for the
//     re-checks the folded flux (with W the weights) to the block's global
//     scratch; prefix sums of F and |u|, u * uscale in float16 and rint(u r8)
//     in int8, by runs of samples;
//   bounds: without W, each warp bounds the gains of each of its jobs (a
//     width's TPJ tiles of 128 strided shifts) by int8 products (m16n8k32,
//     q_a against the int8 fold q, exact int32 sums: half the k-steps;
//     tensor_tables.py's allowance over the job's window);
//   screen: the warp's job of the largest bound first, then its others in
//     turn, those whose bound the running lower gain has passed skipped: per
//     job (TPJ_W tiles with W) a warp forms AR of every shift as one
//     mma.sync.m16n8k16 per 16 template samples: the template banded over 16
//     sub-shifts, A[m, j] = a16[j - S m]
//     (backends/tensor_tables.py, one fragment a k-step shared by the job's
//     tiles), against the fold's columns B[j, n] = u16[s0 + 16 S n + j] (one
//     ldmatrix.x4 two tiles), D[m, n] = AR(s0 + S (16 n + m)); a k-free gate
//     (2 k AR - k^2 A2 <= max(AR, 0)^2 / A2 for every k) skips jobs, then
//     tiles, whose largest AR + E cannot reach the running lower gain (with W
//     a job first against A2's floor w_min sum a^2: most skip A2's product); per listed
//     shift the gain 2 k AR - k^2 A2 with the pad
//     2 |k| E (E = e_coef x the tile's sum |u| + e_abs, tensor_tables.py)
//     gives an upper and a lower gain; shifts whose upper gain reaches the
//     period's running best lower gain (the block's, and the warp's own) go to
//     the warp's list; a vote that does not fit stops the job: the list is
//     compacted against the risen lower gain or, if that frees nothing,
//     re-checked at once (their best exact gain raises the lower gain), and
//     the job screened again from that vote;
//   re-checks: the listed shifts reaching the final lower gain, in float64 (a
//     warp per shift); the best is the largest, ties to the lowest width
//     index, then the lowest shift, as the cpu backend's scan.
#include <cuda_fp16.h>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_scan.cuh>

#ifndef CAP
#define CAP 1024  // kept shifts a block holds, CAP / WARPS a warp (at least a vote's 32)
#endif
#ifndef TPJ
#define TPJ 2  // tiles a warp's job takes: they share each k-step's template fragment
#endif
#ifndef TPJ_W
#define TPJ_W TPJ  // the same in tensor_search_w
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef KUNROLL
#define KUNROLL 4  // k-steps of the screen's loop unrolled
#endif
#ifndef AHEAD
#define AHEAD 4  // global loads a thread issues before it uses any: the fold's gather, a re-check's terms
#endif
#define PRAGMA(x) _Pragma(#x)
#define UNROLL(n) PRAGMA(unroll n)
#ifndef DEBUG
#define DEBUG 0  // 1: every shift the screen skips gets its exact gain, checked against the bound that skipped it
#endif
#define WARPS (BLOCK / 32)
#include "bucket_sort.cuh"  // the fold's order, as pruned sorts it
#define GATE_SLACK (1.0 - 0x1p-40)  // the gate's double rounding, many times over
#ifndef A2_FLOOR  // w_min sum a^2's roundings (sum a^2 of L < 2^17 positive terms, one product); tests break it
#define A2_FLOOR (1.0 - 0x1p-35)
#endif
#define TINY_REL 0x1p-48  // the screen's gain arithmetic (k from 1 / d, a few roundings), many times over
#define CAPW (CAP / WARPS)
#define TILE 128
static_assert(CAPW >= 32, "a warp's list holds at least one vote's shifts");
#define MAXW 64
#define MAXJOBS 512  // jobs of a period that keep their int8 bound (K2-like: at most 288); later ones have none
// Profile builds' clock slots (stage_clocks.cuh), a period's stages: the
// fold's phases and order (bucket_rank_n), its gather and prefix sums; the
// screen with its setup; the last re-checks; the rest (the widths' setup
// before the fold is not counted); the periods; each warp's own cycles in the
// screen and in the last re-checks, summed over warps; a period whole (the
// widths' setup and the barriers with the stages); the blocks' lives (their
// first look at the queue too).
enum { CLOCK_SORT, CLOCK_GATHER, CLOCK_PREFIX, CLOCK_SCREEN, CLOCK_RECHECKS, CLOCK_FINAL, N_PERIODS,
       CLOCK_WARP_SCREEN, CLOCK_WARP_RECHECKS, CLOCK_WHOLE, CLOCK_LIFE, N_CLOCKS };
#include "stage_clocks.cuh"

struct Width {  // a period's allowed width, as its jobs and re-checks read it
    int d, S, ns, K, foff, len, aoff, f8off;  // len, aoff: the template's length and offset in a
    double smax, ks, a2, inv, ecoef, eabs, rd;  // a2: A2, or with W its floor w_min sum a^2
    double inv_w, rlo, rhi, eabs2;  // weights that differ: A2's scale, 1 / (1 -+ its relative allowance) rounded
                                     // down and up, and its absolute allowance
    // the int8 bounds, in float32: AR per unit of their sums (rounded up, down), their allowance's
    // coefficient and constant and 1 / (A2 GATE_SLACK) (a division a job took 3.4 %), rounded up
    float s8u, s8d, d8, eabs8, ra2;
};

// Where sample x of the float16 fold lies: its 16-byte chunk's low bit
// flipped in every other group of eight chunks. A B fragment's eight columns
// lie 16 S samples (2 S chunks) apart: in place, at stride 1 (most widths)
// they would share banks pairwise; so placed, no two share one at strides 1,
// 3 and 5 (at 2 and 4, two and four do, as they did before the operands were
// swapped).
__device__ __forceinline__ int placed(int x) { return x ^ ((x >> 3) & 8); }

// B's registers of the job's T tiles at one k-step, two tiles an ldmatrix.x4:
// their 8 x 8 blocks (k 0-7, then 8-15) of tile tt, then of tile tt + 1, lane l
// giving the address of column l & 7 at k 8 ((l >> 3) & 1) of tile l >> 4
// (``at``: that sample of tile 0, placed, in bytes; ``step`` bytes to the next
// tile, 128 S samples, which ``placed`` keeps apart); an odd last tile by an
// ldmatrix.x2 (lanes l < 16 read).
template <int T>
__device__ __forceinline__ void load_b(uint2 *b, unsigned at, unsigned step)
{
#pragma unroll
    for (int tt = 0; tt + 1 < T; tt += 2)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(b[tt].x), "=r"(b[tt].y), "=r"(b[tt + 1].x), "=r"(b[tt + 1].y)
                     : "r"(at + tt * step));
    if (T & 1)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                     : "=r"(b[T - 1].x), "=r"(b[T - 1].y)
                     : "r"(at + (T - 1) * step));
}

// d += A B for one tile: float16 m16n8k16 (A's registers in a, a template
// fragment; float32 sums) or int8 m16n8k32 (q_a against the int8 fold; exact
// int32 sums), by the accumulators' type; B's registers in b.
__device__ __forceinline__ void mma(float *d, uint4 a, uint2 b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y));
}

__device__ __forceinline__ void mma(int *d, uint4 a, uint2 b)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y));
}

// ``load_b``'s address of k-step kk from this lane's column ``col`` (k-step 0)
// of the fold at byte ``at``: the float16 fold's samples placed, 2 bytes each,
// 16 a k-step; the int8 fold's bytes, 32 a k-step, B's 8 x 8 blocks of 16-bit
// pairs holding 16 of a column's bytes each (k 0-15, then 16-31), in place
// (``flip`` 0) or, in the even strides' copy (``flip`` 16), their 16-byte
// chunk's low bit flipped in every other group of eight chunks (``placed8``).
// A B fragment's eight columns lie S chunks apart: in place, conflict-free at
// strides 1, 3 and 5, at 2 and 4 two and four share a bank; in the copy no
// two do at stride 2, two at 4 (a tile, 8 S chunks on, keeps the flip at even
// S). One layout cannot serve strides 1 and 2 both.
__device__ __forceinline__ unsigned placed8(unsigned x, unsigned flip) { return x ^ ((x >> 3) & flip); }
__device__ __forceinline__ unsigned b_at(float, unsigned at, int col, int kk, unsigned)
{
    return at + 2 * placed(col + 16 * kk);
}
__device__ __forceinline__ unsigned b_at(int, unsigned at, int col, int kk, unsigned flip)
{
    return at + placed8(col + 32 * kk, flip);
}

// acc[tt] += the K k-steps' products of a job's T tiles: A's fragments from
// ``af`` (this lane's, k-step 0), B's from the fold at byte ``at`` (``b_at``,
// with ``flip``) from ``col`` (this lane's, k-step 0) on.
template <int T, class Acc>
__device__ __forceinline__ void job_product(Acc (*acc)[4], const uint4 *af, unsigned at, int col, int K,
                                            unsigned tile_bytes, unsigned flip)
{
    UNROLL(KUNROLL)
    for (int kk = 0; kk < K; ++kk) {
        const uint4 a = __ldg(af);
        af += 32;
        uint2 x[T];
        load_b<T>(x, b_at(Acc(), at, col, kk, flip), tile_bytes);
#pragma unroll
        for (int tt = 0; tt < T; ++tt) mma(acc[tt], a, x[tt]);
    }
}

// job_product of the job's first ``live`` (1 .. T) tiles: a width's last job
// may hold fewer than T with listed shifts (the rest stay 0). A k-loop for
// each count, not a predicate at each mma: those took the registers of a
// profile build (STAGE_CLOCKS) beyond its 80, and it spilled.
template <int T, class Acc>
__device__ __forceinline__ void live_product(Acc (*acc)[4], const uint4 *af, unsigned at, int col, int K,
                                             unsigned tile_bytes, int live, unsigned flip = 0)
{
    if constexpr (T > 1)
        if (live < T) return live_product<T - 1>(acc, af, at, col, K, tile_bytes, live, flip);
    job_product<T>(acc, af, at, col, K, tile_bytes, flip);
}

// The shift (in units of the stride, within the width's list) of D entry h
// of lane (g, tg) in tile ``tile``: D[m, n] = AR(s0 + S (16 n + m)) with
// (m, n) = (g + 8 (h >> 1), 2 tg + (h & 1)).
__device__ __forceinline__ int shift_of(int tile, int g, int tg, int h)
{
    return tile * TILE + 16 * (2 * tg + (h & 1)) + g + 8 * (h >> 1);
}

// x % n for 0 <= x < m <= 2 n (the patched fold: no width is wider than the
// light curve's samples, tensor.py's refuses): a select, not a loop, so that
// the loads it indexes can be issued together.
__device__ __forceinline__ int wrap(int x, int n) { return x < n ? x : x - n; }

// A block's periods (file scope: no register holds them across a search):
// the queue and the periods' width windows, as the kernel got them; the
// period searched and the next, taken during its screen (``take``), each as
// its index, first and end width.
struct Queue {
    int *at;
    const int *lo, *hi;
    int n, taken[2][3];
};
__shared__ Queue queued;

// The next period of the queue's to queued.taken[k]: its index, then (if
// there is one) its first and end width.
__device__ __forceinline__ void take(int k)
{
    const int p = atomicAdd(queued.at, 1);
    queued.taken[k][0] = p;
    if (p < queued.n) {
        queued.taken[k][1] = queued.lo[p];
        queued.taken[k][2] = queued.hi[p];
    }
}

struct Top {  // a re-checked shift
    double gain;
    int wi, i;
};

__device__ __forceinline__ bool better(const Top &x, const Top &y)
{
    return x.gain > y.gain || (x.gain == y.gain && (x.wi < y.wi || (x.wi == y.wi && x.i < y.i)));
}

// Drops the warp's kept shifts whose upper gain is below ``lower`` (keeping
// their order); returns how many are left. Each round reads 32 entries before
// writing any, and writes only at or below what it read.
__device__ int compact(int *iw, float *ub, int count, unsigned long long lower_bits, int lane, unsigned below)
{
    const double lower = __longlong_as_double((long long)lower_bits);
    int left = 0;
    for (int c0 = 0; c0 < count; c0 += 32) {
        const int c = c0 + lane;
        const int x = c < count ? iw[c] : 0;
        const float y = c < count ? ub[c] : -1.0f;
        const bool keep = c < count && y >= lower;
        const unsigned vote = __ballot_sync(0xffffffffu, keep);
        __syncwarp();
        if (keep) {
            iw[left + __popc(vote & below)] = x;
            ub[left + __popc(vote & below)] = y;
        }
        __syncwarp();
        left += __popc(vote);
    }
    return left;
}

struct Pair {  // prefix sums of F and of |u|
    double f, a;
};

struct PairAdd {
    __device__ __forceinline__ Pair operator()(const Pair &x, const Pair &y) const { return {x.f + y.f, x.a + y.a}; }
};

// Period p's fold in shared memory: cs = prefix sums of F (m + 1 doubles), au
// = prefix sums of |u| (m + 1 floats: they only pad the screen's allowance, by
// their rounding), u16 = u uscale in float16 (mp halves, zero past m), with W
// the weights' w16 = W wscale too, without W u8 = rint(u r8) in int8 (mp
// bytes, zero past m; |u r8| <= 127 by r8's choice), then its copy for the
// even strides (mp bytes, placed8). For the re-checks and the prefix sums, to
// fold_g: the patched folded flux F (m doubles), with W the folded weights
// after them (m doubles: no load through the order). The sort's keys, counts
// and 16-bit indices (n < 2^16: 14 n bytes fit an SM) share the ``bytes`` of
// the fold: keys first, the two index arrays last (past cs's m doubles, where
// F is gathered), as many bucket counts as fit between (n / 2 at least). Each
// thread scans its own run of samples twice (totals, a block scan, then its
// prefix sums), F read one sample ahead of the write over it.
template <bool W>
__device__ void fold_period(const double *t, const double *y, const double *wt, double w_uniform, int n, int m,
                            int mp, int bytes, double uscale, double wscale, double r8, double period,
                            double *fold_g, double *cs, float *au, __half *u16, __half *w16, signed char *u8)
{
    CLOCK_MARK(mark);
    {
        double *key = cs;
        unsigned short *out = reinterpret_cast<unsigned short *>(reinterpret_cast<unsigned char *>(cs) + bytes) - n,
                       *tmp = out - n;
        int *count = reinterpret_cast<int *>(key + n);
        const int nb = min(n, (int)(reinterpret_cast<int *>(tmp) - count));  // tmp: 4-byte aligned (bytes, 4 n)
        bucket_rank_n([=](int i) { return key[i] = fold_phase(t[i], period); }, key, tmp, out, n, count, nb);
        CLOCK_ADD(CLOCK_SORT, mark);
        for (int k0 = threadIdx.x; k0 < m; k0 += AHEAD * BLOCK) {
            int o[AHEAD];
            double f[AHEAD], wv[AHEAD];
#pragma unroll
            for (int u = 0; u < AHEAD; ++u) o[u] = out[wrap(min(k0 + u * BLOCK, m - 1), n)];
#pragma unroll
            for (int u = 0; u < AHEAD; ++u) {
                f[u] = y[o[u]];
                if (W) wv[u] = wt[o[u]];
            }
#pragma unroll
            for (int u = 0; u < AHEAD; ++u) {
                const int k = k0 + u * BLOCK;
                if (k < m) {
                    cs[k] = f[u];
                    fold_g[k] = f[u];
                    if (W) fold_g[m + k] = wv[u];
                }
            }
        }
        __syncthreads();
        CLOCK_ADD(CLOCK_GATHER, mark);
    }
    typedef cub::BlockScan<Pair, BLOCK> Scan;
    __shared__ typename Scan::TempStorage scan;
    const int run = odd_run(m), first = min(m, (int)threadIdx.x * run), last = min(m, first + run);
    const auto weight = [&](int k) { return W ? fold_g[m + k] : w_uniform; };
    Pair own = {0.0, 0.0};
    for (int k = first; k < last; ++k) own = PairAdd()(own, {cs[k], fabs((1.0 - cs[k]) * weight(k))});
    double next = first < last ? cs[first] : 0.0;
    Pair s;
    Scan(scan).ExclusiveScan(own, s, Pair{0.0, 0.0}, PairAdd());
    __syncthreads();  // every run's first sample is in a register before any is written over
    for (int k = first; k < last; ++k) {
        const double f = next, wk = weight(k), u = (1.0 - f) * wk;
        next = k + 1 < last ? cs[k + 1] : 0.0;
        s = PairAdd()(s, {f, fabs(u)});
        cs[k + 1] = s.f;
        au[k + 1] = (float)s.a;
        u16[placed(k)] = __double2half(u * uscale);
        if (W) w16[placed(k)] = __double2half(wk * wscale);
        if (!W) u8[k] = u8[mp + placed8(k, 16)] = (signed char)__double2int_rn(u * r8);
    }
    for (int k = m + threadIdx.x; k < mp; k += BLOCK) {
        u16[placed(k)] = __double2half(0.0);
        if (W) w16[placed(k)] = __double2half(0.0);
        if (!W) u8[k] = u8[mp + placed8(k, 16)] = 0;
    }
    if (threadIdx.x == 0) {
        cs[0] = 0.0;
        au[0] = 0.0f;
    }
    __syncthreads();
    CLOCK_ADD(CLOCK_PREFIX, mark);
}

// The kernels' parameters: the light curve (t, y, w: weights that differ, read
// by tensor_search_w only), its scales, the periods and width windows, the
// width tables (tensor_tables.py's fields, TLS's overshoot, the A fragments of
// a, of a^2 and of q_a, the templates), the blocks' fold scratch, the outputs and the
// counters; the queue of periods (an int, 0 at launch).
#define SEARCH_PARAMS                                                                                              \
    const double *__restrict__ t, const double *__restrict__ y, const double *__restrict__ wt, double w_uniform,   \
        double w_min, double w_max, int n, int m, int mp, double uscale, double wscale, double r8,                 \
        const double *__restrict__ periods, int n_periods, int *__restrict__ queue, const int *__restrict__ lo,    \
        const int *__restrict__ hi, const int *__restrict__ job_start, const int *__restrict__ wd,                 \
        const int *__restrict__ ws, const int *__restrict__ wn, const int *__restrict__ wk,                        \
        const int *__restrict__ wlen, const double *__restrict__ s_max, const double *__restrict__ kscale,         \
        const double *__restrict__ sum_a2, const double *__restrict__ a1, const double *__restrict__ e_coef,       \
        const double *__restrict__ inv_sa, const double *__restrict__ e_rel, const double *__restrict__ inv_sa2,   \
        const double *__restrict__ s8, const double *__restrict__ d8, const double *__restrict__ a1q,              \
        const double *__restrict__ overshoot, const long long *__restrict__ f_off,                                 \
        const uint4 *__restrict__ frag, const uint4 *__restrict__ frag2, const long long *__restrict__ f8_off,     \
        const uint4 *__restrict__ frag8, const long long *__restrict__ a_off,                                      \
        const double *__restrict__ a, unsigned char *__restrict__ fold_all, double *gain_out, int *index_out,      \
        double *depth_out, unsigned long long *counters
#define SEARCH_ARGS                                                                                                \
    t, y, wt, w_uniform, w_min, w_max, n, m, mp, uscale, wscale, r8, periods, n_periods, queue, lo, hi, job_start, \
        wd, ws, wn, wk, wlen, s_max, kscale, sum_a2, a1, e_coef, inv_sa, e_rel, inv_sa2, s8, d8, a1q,         \
        overshoot, f_off, frag, frag2, f8_off, frag8, a_off, a, fold_all, gain_out, index_out, depth_out, counters

// Shift i of width w's terms j = j0, j0 + step, ... of sum a u and (with W)
// of A2 = sum a^2 W, as the cpu backend's exact_gain: u = (1 - F) W, from the
// patched fold's flux fy and (with W) weights fw (i + j < m: a template is no
// longer than its width). AHEAD terms' loads are issued before any is summed;
// each lane's sums keep their order, and a term past the template adds 0 (a = 0).
template <bool W>
__device__ __forceinline__ double2 dot_terms(const double *a, const Width &w, double w_uniform, const double *fy,
                                             const double *fw, int i, int j0, int step)
{
    const double *aa = a + w.aoff;
    const int len = w.len;
    double dot = 0.0, a2 = 0.0;
    for (int j = j0; j < len; j += AHEAD * step) {
        double aj[AHEAD], f[AHEAD], wj[AHEAD];
#pragma unroll
        for (int u = 0; u < AHEAD; ++u) {
            const int at = min(j + u * step, len - 1);  // in the template: every load valid
            aj[u] = j + u * step < len ? aa[at] : 0.0;
            f[u] = fy[i + at];
            wj[u] = W ? fw[i + at] : w_uniform;
        }
#pragma unroll
        for (int u = 0; u < AHEAD; ++u) {
            dot += aj[u] * ((1.0 - f[u]) * wj[u]);
            if (W) a2 += aj[u] * aj[u] * wj[u];
        }
    }
    return make_double2(dot, a2);
}

// The exact gain 2 k sum a u - k^2 A2 of shift i of width w from its sums
// (without W, w.a2 is A2 = w_uniform sum a^2).
template <bool W>
__device__ __forceinline__ double exact_gain(double2 sums, const double *cs, const Width &w, int i)
{
    const double k = (1.0 - (cs[i + w.d] - cs[i]) / w.d) * w.ks;
    return 2.0 * k * sums.x - k * k * (W ? sums.y : w.a2);
}

// The exact gain of shift i of width w by one thread (DEBUG's checks).
template <bool W>
__device__ double lane_gain(const double *a, const Width &w, double w_uniform, const double *fy, const double *fw,
                            const double *cs, int i)
{
    return exact_gain<W>(dot_terms<W>(a, w, w_uniform, fy, fw, i, 0, 1), cs, w, i);
}

// The screen's counters, in shared memory, then one atomic add per block each:
// tiles past the k-free gate (a job screened again counts its tiles again),
// shifts kept, re-checked, and their multiply-adds. 32-bit (native shared
// atomics; 64-bit ones are compare-and-swap loops), the multiply-adds 64-bit,
// added only by a re-check that did some. Shared memory is tight: two blocks
// of a K2 fold fill an SM.
#define COUNT_SCREENED 0
#define COUNT_KEPT 1
#define COUNT_RECHECKED 2
#define COUNT_MACS 3
#define COUNT_VIOLATIONS 4  // DEBUG: skipped shifts whose exact gain beat their bound
#define COUNT_FLUSHES 5     // lists re-checked early, full after compaction
#define COUNT_COMPACTIONS 6  // lists compacted early, the job screened again from the vote that did not fit
#define COUNT_REFINED 7      // jobs whose int8 bound left them open: their float16 products formed
#define N_COUNTS 8

// Re-checks in float64 the kept shifts first .. end - 1 of a list whose
// upper gain reaches ``lower`` (the warp forms each exact gain; the widths'
// constants from the period's slots, wlo the first's index, not from global
// memory: two dependent loads a re-check fewer). The warp's best so far (in
// shared memory: nothing stays live in the screen's registers) keeps the
// better; returns its gain.
template <bool W>
__device__ double recheck(const int *iw, const float *ub, int first, int end, double lower,
                          Top *warp_best, unsigned *block_counts, unsigned long long *macs_done, const double *a,
                          const Width *slot, int wlo, double w_uniform, const double *fy, const double *fw,
                          const double *cs, int lane)
{
    Top best = *warp_best;
    int rechecked = 0;
    unsigned long long macs = 0;
    for (int c = first; c < end; ++c) {
        if (ub[c] < lower) continue;
        const int i = iw[c] & 0xFFFFFF, wi = iw[c] >> 24;
        const Width &w = slot[wi - wlo];
        double2 sums = dot_terms<W>(a, w, w_uniform, fy, fw, i, lane, 32);
        for (int o = 16; o; o >>= 1) {
            sums.x += __shfl_xor_sync(0xffffffffu, sums.x, o);
            if (W) sums.y += __shfl_xor_sync(0xffffffffu, sums.y, o);
        }
        const Top x = {exact_gain<W>(sums, cs, w, i), wi, i};
        if (better(x, best)) best = x;
        ++rechecked;
        macs += w.len;
    }
    __syncwarp();
    if (lane == 0) {
        *warp_best = best;
        if (rechecked) {
            atomicAdd(&block_counts[COUNT_RECHECKED], (unsigned)rechecked);
            atomicAdd(macs_done, macs);
        }
    }
    __syncwarp();
    return best.gain;
}

#define DEBUG_SLACK (1.0 + 0x1p-30)  // the exact gain's own rounding against a bound's

template <bool W>
__device__ __forceinline__ void search(SEARCH_PARAMS, int k)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int m4 = (m + 4) & ~3;                    // m + 1 rounded up: u16 16-byte aligned
    double *cs = reinterpret_cast<double *>(smem);  // m + 1: prefix sums of F
    float *au = reinterpret_cast<float *>(cs + m4);  // m + 1: prefix sums of |u|
    __half *u16 = reinterpret_cast<__half *>(au + m4);  // mp: u * uscale
    __half *w16 = u16 + mp;                                    // mp with W: the weights * wscale
    signed char *u8 = reinterpret_cast<signed char *>(u16 + mp);  // 2 mp without W: rint(u r8), its copy
    const unsigned u_at = static_cast<unsigned>(__cvta_generic_to_shared(u16)), w_off = 2 * mp;  // bytes: w16 after u16
    const unsigned u8_at = static_cast<unsigned>(__cvta_generic_to_shared(u8));
    __shared__ int tiles[MAXW + 1];
    __shared__ Width slot[MAXW];
    __shared__ int cand_iw[CAP];  // wi << 24 | shift
    __shared__ float cand_ub[CAP];  // upper gains rounded up: compared with lower gains only
    __shared__ unsigned long long lower_bits, macs_done;
    __shared__ int screened;  // warps whose screen is done
    __shared__ unsigned block_counts[N_COUNTS];  // COUNT_MACS's in macs_done
    __shared__ Top red[WARPS];
    __shared__ int listed[WARPS];  // the warps' list lengths at the end of the screen
    __shared__ typename cub::WarpScan<int>::TempStorage list_scan[WARPS];
    __shared__ float bound[W ? 1 : MAXJOBS];  // without W, each job's int8 bound on its gains (its warp's)
    __shared__ unsigned char job_width[MAXJOBS];  // the period's jobs' widths (q): looked up, not walked to (-1 %)

    constexpr int T = W ? TPJ_W : TPJ;  // tiles a job
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    // this block's fold scratch, for the re-checks: the folded flux (8 m bytes), with W the weights after it (8 m)
    double *fold = reinterpret_cast<double *>(fold_all) + (size_t)blockIdx.x * (W ? 2 : 1) * m;
    const double *fw = fold + m;  // with W the folded weights
    // the widths' constants first: their loads' latency passes under the fold's
    const int p = queued.taken[k][0], wlo = queued.taken[k][1], n_w = queued.taken[k][2] - wlo;
    const double inv_su = 1.0 / uscale;  // a power of two (exact)
    const double su8 = 1.0 / r8;         // |u - q su8| <= (1/2 + 2^-44) su8: its rounding too
    for (int q = tid; q <= n_w; q += BLOCK) tiles[q] = job_start[wlo + q] - job_start[wlo];
    for (int q = tid; q < n_w; q += BLOCK) {
        const int wi = wlo + q;
        Width &w = slot[q];
        w.d = wd[wi]; w.S = ws[wi]; w.ns = wn[wi]; w.K = wk[wi]; w.foff = (int)f_off[wi];
        w.len = wlen[wi]; w.aoff = (int)a_off[wi]; w.f8off = (int)f8_off[wi];
        w.smax = s_max[wi]; w.ks = kscale[wi]; w.inv = inv_sa[wi] * inv_su;
        w.a2 = W ? w_min * sum_a2[wi] * A2_FLOOR : w_uniform * sum_a2[wi];
        w.ecoef = e_coef[wi]; w.rd = 1.0 / w.d;
        w.s8u = __double2float_ru(__dmul_ru(s8[wi], su8));
        w.s8d = __double2float_rd(__dmul_rd(s8[wi], su8));
        w.d8 = __double2float_ru(d8[wi]);
        w.eabs8 = __double2float_ru(__dmul_ru(__dmul_ru(a1q[wi], 0.5 + 0x1p-40), su8));  // q's (+ the prefix sums')
        w.ra2 = __double2float_ru(__drcp_ru(__dmul_rd(w.a2, GATE_SLACK)));
        // float16 subnormals of a and u; the prefix sums of |u| (M 2^-52 of their total, twice over) and
        // their float32 roundings (two ends, 2^-24 of the total each, u1 itself rounded: 2^-22 u1)
        w.eabs = 0x1p-24 * a1[wi] * inv_su + wlen[wi] * 0x1p-49 * w.inv;  // + the fold's term below
        if (W) {  // A2's float16 subnormals: of a^2 (times at most L w_max) and of the weights (times sum a^2)
            w.inv_w = inv_sa2[wi] / wscale;
            w.rlo = __drcp_rd(__dadd_ru(1.0, e_rel[wi]));
            w.rhi = __drcp_ru(__dsub_rd(1.0, e_rel[wi]));
            w.eabs2 = 0x1p-24 * (wlen[wi] * w_max * inv_sa2[wi] + sum_a2[wi] / wscale) + wlen[wi] * 0x1p-49 * w.inv_w;
        }
    }
    fold_period<W>(t, y, wt, w_uniform, n, m, mp, 12 * m4 + 2 * mp, uscale, wscale, r8, periods[p], fold, cs, au,
                   u16, w16, u8);
    CLOCK_SHARED(mark);
    const double u1 = au[m];  // the float32 total (e_abs pads it)
    for (int q = tid; q < n_w; q += BLOCK) {
        slot[q].eabs += slot[q].ecoef * (m * 0x1p-51 + 0x1p-22) * u1;
        slot[q].eabs8 = __fadd_ru(slot[q].eabs8, __double2float_ru(__dmul_ru(slot[q].d8, (m * 0x1p-51 + 0x1p-22) * u1)));
        for (int j = tiles[q]; j < min(tiles[q + 1], MAXJOBS); ++j) job_width[j] = q;
    }
    if (tid == 0) {
        lower_bits = macs_done = 0ull;
        screened = 0;
    }
    if (tid < N_COUNTS) block_counts[tid] = 0;
    if (tid < WARPS) red[tid] = {0.0, -1, 0};
    __syncthreads();

    volatile unsigned long long *lower_v = &lower_bits;
    const int total = tiles[n_w], g = lane >> 2, tg = lane & 3;
    const unsigned below = (1u << lane) - 1u;
    int *my_iw = cand_iw + warp * CAPW;
    float *my_ub = cand_ub + warp * CAPW;
    int count = 0;           // the warp's list
    unsigned violations = 0;  // DEBUG
    double lb = 0.0;
    int q = 0;
    // Without W, each warp first bounds its own jobs (job = warp mod WARPS) by
    // int8 products: the bound on every gain of the job, max(AR + e8, 0)^2 /
    // A2, to bound[job] (its roundings' allowance e8 over the job's window).
    // It screens its job of the largest bound first, then the others in turn,
    // skipping those whose bound the lower gain has passed: the lower gain
    // rises early, so few jobs need their float16 products.
    const auto width_of = [&](int job, int q) {  // a job's width: the first MAXJOBS looked up, later ones walked to
        if (job < MAXJOBS) return (int)job_width[job];
        while (tiles[q + 1] <= job) ++q;
        return q;
    };
    int own_best = -1;  // the warp's job of the largest int8 bound
    if (!W) {
        float best = -1.0f;
        for (int job = warp, q8 = 0; job < total; job += WARPS) {
            q8 = width_of(job, q8);
            const Width &w = slot[q8];
            const int tile0 = (job - tiles[q8]) * T, S = w.S;
            const int live = min(T, (w.ns + TILE - 1) / TILE - tile0);
            const int first = min(tile0 * TILE * S, m), end = min((tile0 + live) * TILE * S + w.d, m);
            const float window = __fsub_ru(au[end], au[first]);  // its loads' wait beside the product's
            int c8[T][4] = {};
            const unsigned flip = (~S & 1) << 4;  // even strides read the copy
            // bytes: this lane's load_b column at k-step 0 (k 16-31 at lane & 8)
            live_product<T>(c8, frag8 + w.f8off + lane, u8_at + (flip ? mp : 0),
                            (tile0 + (lane >> 4)) * TILE * S + 16 * S * (lane & 7) + 2 * (lane & 8),
                            (w.K + 1) >> 1, TILE * S, live, flip);  // k-steps of 32 samples
            int top_q = c8[0][0];
#pragma unroll
            for (int tt = 0; tt < T; ++tt)
#pragma unroll
                for (int h = 0; h < 4 && tt < live; ++h) top_q = max(top_q, c8[tt][h]);
            top_q = __reduce_max_sync(0xffffffffu, top_q);
            // each operation rounded up: top and b bound their exact values from above
            const float x = __fmul_ru(__int2float_ru(top_q), top_q >= 0 ? w.s8u : w.s8d);
            const float top = __fadd_ru(__fmaf_ru(w.d8, window, x), w.eabs8);
            const float b = top > 0.0f ? __fmul_ru(__fmul_ru(top, top), w.ra2) : 0.0f;
            if (b > best) {
                best = b;
                own_best = job;
            }
            if (lane == 0 && job < MAXJOBS) bound[job] = b;
        }
        __syncwarp();
    }
    bool own_first = own_best >= 0;
    // A vote (tile tt's quarter h) whose kept shifts do not fit stops its job:
    // the warp compacts its list against the risen lower gain, or, if that
    // frees nothing, re-checks it (which raises the lower gain), and screens
    // the job again, keeping from that vote on (from = 4 tt + h). Out here
    // little else is live, and one compaction's code serves every vote (at
    // each vote, inlined, it was a sixth of the kernel's code).
    int from = 0, stopped = -1;
    const auto next = [&](int &job) {  // the job after a finished one
        if (own_first) {
            own_first = false;
            job = warp;
            q = 0;
        } else {
            job += WARPS;
        }
    };
    for (int job = own_first ? own_best : warp;;) {
        if (own_first) {
            q = 0;  // out of turn
        } else {  // the next job its int8 bound leaves open (DEBUG: every job, each checked against it)
            for (; job < total && from == 0; job += WARPS)
                if (job != own_best && (W || DEBUG || job >= MAXJOBS
                                        || bound[job] >= __longlong_as_double((long long)*lower_v)))
                    break;
            if (job >= total) break;
        }
        q = width_of(job, q);  // jobs only move forward (but a warp's own best, first: q 0)
        const Width &w = slot[q];
        const int wi = wlo + q, tile0 = (job - tiles[q]) * T, d = w.d, S = w.S, K = w.K;
        const int live = min(T, (w.ns + TILE - 1) / TILE - tile0);  // tiles holding listed shifts
        // samples: this lane's load_b column at k-step 0 (of the job's first tile, or its second)
        const int col = (tile0 + (lane >> 4)) * TILE * S + 16 * S * (lane & 7) + (lane & 8);
        const unsigned tile_bytes = 2 * TILE * S;
        // the job's gate (after the int8 bound's): its largest AR + e (e over its live tiles' windows)
        // against its smallest A2, which bound every tile's gate, so a job they all close skips them at
        // one vote; with W first against A2's floor w_min sum a^2, before A2's own product, then against that
        double top = 0.0, job_a2 = 0.0;  // the A2 bound the job's gate closed it with (DEBUG's checks)
        const auto closes = [&](double a2_lo) {
            const double lower = __longlong_as_double((long long)*lower_v);
            job_a2 = a2_lo;
            return !__any_sync(0xffffffffu, top > 0.0 && (a2_lo == 0.0 || top * top >= lower * a2_lo * GATE_SLACK));
        };
        const int first = min(tile0 * TILE * S, m), end = min((tile0 + live) * TILE * S + d, m);
        const double window = (double)au[end] - au[first];  // sum |u| over the live tiles' samples
        bool closed = false;
        if (!W && from == 0 && job < MAXJOBS) {
            const float b = bound[job];
            if (DEBUG && b < __longlong_as_double((long long)*lower_v)) {  // closed by its int8 bound
                closed = true;
                job_a2 = w.a2;
                top = sqrt((double)b * w.a2);
            } else if (lane == 0) {
                atomicAdd(&block_counts[COUNT_REFINED], 1u);
            }
        }
        float c[T][4] = {}, cw[T][4] = {};  // AR; with W, A2
        live_product<T>(c, frag + w.foff + lane, u_at, col, K, tile_bytes, live);
        if (from == 0 && !closed) {
            float top16 = c[0][0];
#pragma unroll
            for (int tt = 0; tt < T; ++tt)
#pragma unroll
                for (int h = 0; h < 4 && tt < live; ++h) top16 = fmaxf(top16, c[tt][h]);
            top = (double)top16 * w.inv + w.ecoef * window + w.eabs;
            closed = closes(w.a2);
            if (closed && !DEBUG) {
                next(job);
                continue;
            }
        }
        if (W) {
            live_product<T>(cw, frag2 + w.foff + lane, u_at + w_off, col, K, tile_bytes, live);
            if (from == 0 && !closed) {
                float a2_16 = cw[0][0];
#pragma unroll
                for (int tt = 0; tt < T; ++tt)
#pragma unroll
                    for (int h = 0; h < 4 && tt < live; ++h) a2_16 = fminf(a2_16, cw[tt][h]);
                closed = closes(fmax(__dmul_rd(__dsub_rd((double)a2_16 * w.inv_w, w.eabs2), w.rlo), 0.0));
                if (closed && !DEBUG) {
                    next(job);
                    continue;
                }
            }
        }
        const double smax = w.smax, rd = w.rd, ks = w.ks, a2w = w.a2, inv2 = 2.0 * w.inv;
        const int ns = w.ns;
#pragma unroll
        for (int tt = 0; tt < T; ++tt) {
            if (4 * tt + 3 < from || tt >= live) continue;
            const int tile = tile0 + tt, s0 = min(tile * TILE * S, m);
            const double e = w.ecoef * ((double)au[min(s0 + TILE * S + d, m)] - au[s0]) + w.eabs, e2 = 2.0 * e;
            const double lower = __longlong_as_double((long long)*lower_v);
            // k-free gate: 2 k AR - k^2 A2 <= max(AR, 0)^2 / A2 for every k, so a tile
            // whose largest AR + e cannot reach the lower gain holds no shift that can
            // with W: A2 in [a2_lo, a2_hi] from its float16 product and allowances (a2_lo 0: no gate)
            double a2_lo[4], a2_hi[4];
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                const double a2h = (double)cw[tt][h] * w.inv_w;
                a2_lo[h] = W ? fmax(__dmul_rd(__dsub_rd(a2h, w.eabs2), w.rlo), 0.0) : a2w;
                a2_hi[h] = W ? __dmul_ru(__dadd_ru(a2h, w.eabs2), w.rhi) : a2w;
            }
            bool open = false;
#pragma unroll
            for (int h = 0; h < (W ? 4 : 1); ++h) {
                const double top = (W ? c[tt][h] : fmax(fmax(c[tt][0], c[tt][1]), fmax(c[tt][2], c[tt][3])))
                                   * w.inv + e;
                open |= top > 0.0 && (a2_lo[h] == 0.0 || top * top >= lower * a2_lo[h] * GATE_SLACK);
            }
            if (DEBUG && closed)  // a closed job's listed shifts: each gain at most max(top, 0)^2 / job_a2
                for (int h = 0; h < 4; ++h) {
                    const int s = shift_of(tile, g, tg, h), i = s * S;
                    if (s >= ns || !(cs[i + d] - cs[i] <= smax)) continue;
                    const double gain = lane_gain<W>(a, w, w_uniform, fold, fw, cs, i);
                    violations += gain > fmax(top, 0.0) * fmax(top, 0.0) / job_a2 * DEBUG_SLACK;
                }
            if (!__any_sync(0xffffffffu, open)) {
                if (DEBUG)  // every listed shift of the tile: its gain at most max(AR + e, 0)^2 / A2_lo
                    for (int h = 0; h < 4; ++h) {
                        const int s = shift_of(tile, g, tg, h), i = s * S;
                        if (s >= ns || !(cs[i + d] - cs[i] <= smax)) continue;
                        const double top = fmax((double)c[tt][h] * w.inv + e, 0.0);
                        const double gain = lane_gain<W>(a, w, w_uniform, fold, fw, cs, i);
                        violations += a2_lo[h] > 0.0 && gain > top * top / a2_lo[h] * DEBUG_SLACK;
                    }
                continue;
            }
            if (lane == 0) atomicAdd(&block_counts[COUNT_SCREENED], 1u);
            double ub[4];
            bool any = false;
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                const int s = shift_of(tile, g, tg, h), i = s * S;
                ub[h] = -1.0;
                if (s < ns) {
                    const double sum = cs[i + d] - cs[i];
                    if (sum <= smax) {
                        const double k = (1.0 - sum * rd) * ks;
                        const double x = k * ((double)c[tt][h] * inv2), ylo = k * (k * a2_lo[h]),
                                     yhi = k * (k * a2_hi[h]);
                        const double pad = fabs(k) * e2 + TINY_REL * (fabs(x) + 2.0 * yhi);
                        ub[h] = x - ylo + pad;
                        lb = fmax(lb, x - yhi - pad);
                        if (DEBUG) {  // every screened shift's exact gain between its two bounds
                            const double gain = lane_gain<W>(a, w, w_uniform, fold, fw, cs, i);
                            const double slack = (fabs(gain) + fabs(x) + yhi) * (DEBUG_SLACK - 1.0);
                            violations += gain > ub[h] + slack || gain < x - yhi - pad - slack;
                        }
                    }
                }
                any |= ub[h] >= lower;  // lower >= 0: no gain <= 0 wins
            }
            if (lb > lower) atomicMax(&lower_bits, (unsigned long long)__double_as_longlong(lb));
            if (!__any_sync(0xffffffffu, any)) continue;
            double reach = lb;  // the warp's own best lower gain, at least lower: keep less while lower is young
            for (int o = 16; o; o >>= 1) reach = fmax(reach, __shfl_xor_sync(0xffffffffu, reach, o));
            reach = fmax(reach, lower);
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                const bool take = ub[h] >= reach;
                const unsigned vote = __ballot_sync(0xffffffffu, take);
                if (!vote || 4 * tt + h < from) continue;
                const int n_new = __popc(vote);
                if (count + n_new > CAPW) {
                    stopped = 4 * tt + h;
                    break;
                }
                if (take) {
                    const int at = count + __popc(vote & below);
                    my_iw[at] = wi << 24 | shift_of(tile, g, tg, h) * S;
                    my_ub[at] = __double2float_ru(ub[h]);
                }
                count += n_new;
                if (lane == 0) atomicAdd(&block_counts[COUNT_KEPT], (unsigned)n_new);
            }
            if (stopped >= 0) break;
        }
        if (stopped < 0) {
            from = 0;
            next(job);
            continue;
        }
        const int left = compact(my_iw, my_ub, count, *lower_v, lane, below);
        if (left == count) {
            const double now = __longlong_as_double((long long)*lower_v);
            const double got = recheck<W>(my_iw, my_ub, 0, count, now, red + warp, block_counts, &macs_done, a,
                                          slot, wlo, w_uniform, fold, fw, cs, lane);
            if (lane == 0 && got > now) atomicMax(&lower_bits, (unsigned long long)__double_as_longlong(got));
        }
        if (lane == 0) atomicAdd(&block_counts[left == count ? COUNT_FLUSHES : COUNT_COMPACTIONS], 1u);
        count = left == count ? 0 : left;
        from = stopped;
        stopped = -1;
    }
    CLOCK_WARP(CLOCK_WARP_SCREEN, mark);
    if (lane == 0 && atomicAdd(&screened, 1) == 0) take(k ^ 1);  // the next period, while the rest screen
    __syncthreads();  // the screen done: the lower gain is final
    CLOCK_ADD(CLOCK_SCREEN, mark);  // read by the warps after the next barrier

    // the last re-checks: each list compacted against the final lower gain, then the entries left dealt in
    // turn to every warp (one list may hold most), so that no warp walks every list
    const double last = __longlong_as_double((long long)lower_bits);
    count = compact(my_iw, my_ub, count, lower_bits, lane, below);
    if (lane == 0) listed[warp] = count;
    __syncthreads();
    const int held = lane < WARPS ? listed[lane] : 0;  // lane v: list v's length
    int ends;                                           // lane v: the entries of lists 0 .. v
    cub::WarpScan<int>(list_scan[warp]).InclusiveSum(held, ends);
    for (int e = warp; e < __shfl_sync(0xffffffffu, ends, 31); e += WARPS) {
        const int v = __popc(__ballot_sync(0xffffffffu, ends <= e));  // the list holding entry e
        const int c = e - __shfl_sync(0xffffffffu, ends - held, v);
        recheck<W>(cand_iw + v * CAPW, cand_ub + v * CAPW, c, c + 1, last, red + warp, block_counts, &macs_done, a,
                   slot, wlo, w_uniform, fold, fw, cs, lane);
    }
    for (int o = 16; DEBUG && o; o >>= 1) violations += __shfl_xor_sync(0xffffffffu, violations, o);
    if (lane == 0 && violations) atomicAdd(&block_counts[COUNT_VIOLATIONS], violations);
    CLOCK_WARP(CLOCK_WARP_RECHECKS, mark);
    __syncthreads();
    CLOCK_ADD(CLOCK_RECHECKS, mark);
    if (tid == 0) {
        const int p = queued.taken[k][0];  // read again: no register held across the screen
        Top best = red[0];
        for (int w = 1; w < WARPS; ++w)
            if (better(red[w], best)) best = red[w];
        gain_out[p] = best.gain;
        index_out[p] = best.wi;
        // the flux at transit bottom, as the cpu backend: 1 - box * overshoot (0 where no shift passed)
        depth_out[p] = best.wi < 0 ? 0.0 : 1.0 - (1.0 - (cs[best.i + wd[best.wi]] - cs[best.i]) / wd[best.wi])
                                                   * overshoot[best.wi];
    }
    if (tid < N_COUNTS)
        atomicAdd(&counters[tid], tid == COUNT_MACS ? macs_done : (unsigned long long)block_counts[tid]);
    CLOCK_ADD(CLOCK_FINAL, mark);
    CLOCK_COUNT(N_PERIODS);
}

// A block searches period after period, each the next of the queue's: no
// block is launched a period. The search is a call: inlined in the loop, the
// loop-invariant values the compiler hoists out of it spill. The first warp
// done with a period's screen takes the next period (``take``'s loads wait
// beside the other warps' screens, not between periods).
template <bool W>
__device__ __noinline__ void search_call(SEARCH_PARAMS, int k)
{
    search<W>(SEARCH_ARGS, k);
}

template <bool W>
__device__ __forceinline__ void search_queue(SEARCH_PARAMS)
{
    CLOCK_SHARED(life);
    if (threadIdx.x == 0) {
        queued = {queue, lo, hi, n_periods};
        take(0);
    }
    __syncthreads();
    for (int k = 0; queued.taken[k][0] < n_periods; k ^= 1) {
        CLOCK_SHARED(whole);
        search_call<W>(SEARCH_ARGS, k);
        __syncthreads();  // the period's shared memory read before the next writes over it
        CLOCK_ADD(CLOCK_WHOLE, whole);
    }
    CLOCK_ADD(CLOCK_LIFE, life);
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) tensor_search(SEARCH_PARAMS)
{
    search_queue<false>(SEARCH_ARGS);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 1) tensor_search_w(SEARCH_PARAMS)
{
    search_queue<true>(SEARCH_ARGS);
}
