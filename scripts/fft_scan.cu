// The exact chi2 scan of one period per block by FFT correlation in shared
// memory (scripts/fft_study.py --fused; a lead for issue 12, not a backend).
//
// U is the fold's rfft, made first by the same FFT. Per pair of allowed
// widths (w1, w2): Z = U conj(A1) + i U conj(A2) over the
// whole spectrum (Hermitian halves from the rfft), one inverse complex FFT of
// length M (Stockham passes of radices up to 18, fft_study.radix_plan) gives M AR1 + i M AR2. The
// float32 screen (below) bounds every shift's gain; every listed shift whose upper gain reaches
// the period's running best lower gain is queued, and at the end the queued shifts that reach
// the final one are re-evaluated in float64.

#ifndef THREADS
#define THREADS 256
#endif
#define QUEUE 256
#define MAX_PASSES 24
#define NEG_INF (-__longlong_as_double(0x7ff0000000000000LL))

struct Candidate {
    double upper;
    int wi;
    int shift;
};

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ float2 cadd(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float2 csub(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
__device__ __forceinline__ float2 times_i(float2 a) { return make_float2(-a.y, a.x); }

// y_p = sum_q v_q exp(+2 pi i p q / R): the inverse DFT of R points in registers
template <int R>
__device__ __forceinline__ void small_dft(float2* v) {
    if (R == 2) {
        float2 a = v[0], b = v[1];
        v[0] = cadd(a, b);
        v[1] = csub(a, b);
    } else if (R == 4) {
        float2 s02 = cadd(v[0], v[2]), d02 = csub(v[0], v[2]);
        float2 s13 = cadd(v[1], v[3]), d13 = times_i(csub(v[1], v[3]));
        v[0] = cadd(s02, s13);
        v[1] = cadd(d02, d13);
        v[2] = csub(s02, s13);
        v[3] = csub(d02, d13);
    } else if (R == 3) {
        const float c = -0.5f, s = 0.86602540378443864676f;
        float2 a = v[0], b = v[1], d = v[2];
        float2 sum = cadd(b, d), dif = csub(b, d);
        float2 m = make_float2(a.x + c * sum.x, a.y + c * sum.y);
        float2 r = make_float2(-s * dif.y, s * dif.x);  // i s (b - d)
        v[0] = cadd(a, sum);
        v[1] = cadd(m, r);
        v[2] = csub(m, r);
    } else {  // R == 5
        const float c1 = 0.30901699437494745f, s1 = 0.95105651629515357212f;
        const float c2 = -0.80901699437494745f, s2 = 0.58778525229247312917f;
        float2 a = v[0];
        float2 s14 = cadd(v[1], v[4]), d14 = csub(v[1], v[4]);
        float2 s23 = cadd(v[2], v[3]), d23 = csub(v[2], v[3]);
        float2 m1 = make_float2(a.x + c1 * s14.x + c2 * s23.x, a.y + c1 * s14.y + c2 * s23.y);
        float2 m2 = make_float2(a.x + c2 * s14.x + c1 * s23.x, a.y + c2 * s14.y + c1 * s23.y);
        // i (s1 d14 + s2 d23) and i (s2 d14 - s1 d23)
        float2 r1 = times_i(make_float2(s1 * d14.x + s2 * d23.x, s1 * d14.y + s2 * d23.y));
        float2 r2 = times_i(make_float2(s2 * d14.x - s1 * d23.x, s2 * d14.y - s1 * d23.y));
        v[0] = cadd(a, cadd(s14, s23));
        v[1] = cadd(m1, r1);
        v[4] = csub(m1, r1);
        v[2] = cadd(m2, r2);
        v[3] = csub(m2, r2);
    }
}

// exp(+2 pi i e / R) for the exponents composite_dft uses (folds to constants once unrolled)
template <int R>
__device__ __forceinline__ float2 unit_root(int e) {
    if (R == 6 && e == 1) return make_float2(0.5f, 0.866025404f);
    if (R == 6 && e == 2) return make_float2(-0.5f, 0.866025404f);
    if (R == 8 && e == 1) return make_float2(0.707106781f, 0.707106781f);
    if (R == 8 && e == 2) return make_float2(0.0f, 1.0f);
    if (R == 8 && e == 3) return make_float2(-0.707106781f, 0.707106781f);
    if (R == 9 && e == 1) return make_float2(0.766044443f, 0.64278761f);
    if (R == 9 && e == 2) return make_float2(0.173648178f, 0.984807753f);
    if (R == 9 && e == 4) return make_float2(-0.939692621f, 0.342020143f);
    if (R == 10 && e == 1) return make_float2(0.809016994f, 0.587785252f);
    if (R == 10 && e == 2) return make_float2(0.309016994f, 0.951056516f);
    if (R == 10 && e == 3) return make_float2(-0.309016994f, 0.951056516f);
    if (R == 10 && e == 4) return make_float2(-0.809016994f, 0.587785252f);
    if (R == 12 && e == 1) return make_float2(0.866025404f, 0.5f);
    if (R == 12 && e == 2) return make_float2(0.5f, 0.866025404f);
    if (R == 12 && e == 3) return make_float2(0.0f, 1.0f);
    if (R == 12 && e == 4) return make_float2(-0.5f, 0.866025404f);
    if (R == 12 && e == 6) return make_float2(-1.0f, 0.0f);
    if (R == 15 && e == 1) return make_float2(0.913545458f, 0.406736643f);
    if (R == 15 && e == 2) return make_float2(0.669130606f, 0.743144825f);
    if (R == 15 && e == 3) return make_float2(0.309016994f, 0.951056516f);
    if (R == 15 && e == 4) return make_float2(-0.104528463f, 0.994521895f);
    if (R == 15 && e == 6) return make_float2(-0.809016994f, 0.587785252f);
    if (R == 15 && e == 8) return make_float2(-0.978147601f, -0.207911691f);
    if (R == 16 && e == 1) return make_float2(0.923879533f, 0.382683432f);
    if (R == 16 && e == 2) return make_float2(0.707106781f, 0.707106781f);
    if (R == 16 && e == 3) return make_float2(0.382683432f, 0.923879533f);
    if (R == 16 && e == 4) return make_float2(0.0f, 1.0f);
    if (R == 16 && e == 6) return make_float2(-0.707106781f, 0.707106781f);
    if (R == 16 && e == 9) return make_float2(-0.923879533f, -0.382683432f);
    if (R == 18 && e == 1) return make_float2(0.939692621f, 0.342020143f);
    if (R == 18 && e == 2) return make_float2(0.766044443f, 0.64278761f);
    if (R == 18 && e == 3) return make_float2(0.5f, 0.866025404f);
    if (R == 18 && e == 4) return make_float2(0.173648178f, 0.984807753f);
    if (R == 18 && e == 5) return make_float2(-0.173648178f, 0.984807753f);
    if (R == 18 && e == 6) return make_float2(-0.5f, 0.866025404f);
    if (R == 18 && e == 7) return make_float2(-0.766044443f, 0.64278761f);
    if (R == 18 && e == 8) return make_float2(-0.939692621f, 0.342020143f);
    return make_float2(1.f, 0.f);
}

// A composite radix R = Q S as its first factor Q (R itself for 2, 3, 4, 5)
template <int R>
__host__ __device__ constexpr int first_factor() {
    if (R == 6) return 3;
    if (R == 8) return 4;
    if (R == 9) return 3;
    if (R == 10) return 5;
    if (R == 12) return 4;
    if (R == 15) return 5;
    if (R == 16) return 4;
    if (R == 18) return 9;
    return R;
}

template <int R>
__device__ __forceinline__ void dft(float2* v);

// R = Q S in registers: y_(p + Q s) = sum_t w_S^(t s) w_R^(t p) D_t[p], D_t the Q-point DFT of
// v[t], v[t + S], ... (t < S)
template <int R>
__device__ __forceinline__ void composite_dft(float2* v) {
    constexpr int Q = first_factor<R>(), S = R / Q;
    float2 d[S][Q];
#pragma unroll
    for (int t = 0; t < S; ++t) {
#pragma unroll
        for (int q = 0; q < Q; ++q) d[t][q] = v[t + S * q];
        dft<Q>(d[t]);
    }
#pragma unroll
    for (int p = 0; p < Q; ++p) {
        float2 e[S];
#pragma unroll
        for (int t = 0; t < S; ++t) e[t] = t * p ? cmul(d[t][p], unit_root<R>(t * p)) : d[t][p];
        dft<S>(e);
#pragma unroll
        for (int t = 0; t < S; ++t) v[p + Q * t] = e[t];
    }
}

template <int R>
__device__ __forceinline__ void dft(float2* v) {
    if constexpr (first_factor<R>() == R) small_dft<R>(v);
    else composite_dft<R>(v);
}

template <int R>
__device__ void stockham_pass(const float2* __restrict__ src, float2* __restrict__ dst, int M, int Ns,
                              const float2* __restrict__ twiddle) {
    // j = b Ns + k walks in steps of THREADS: b and k advance without a division per butterfly;
    // r k step < M, so the twiddle index needs no reduction
    const int count = M / R, step = M / (Ns * R), db = THREADS / Ns, dk = THREADS - db * Ns;
    int b = threadIdx.x / Ns, k = threadIdx.x - b * Ns;
    for (int j = threadIdx.x; j < count; j += THREADS) {
        float2 v[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            v[r] = src[j + r * count];
            if (r > 0) v[r] = cmul(v[r], __ldg(&twiddle[r * k * step]));
        }
        dft<R>(v);
        const int at = b * Ns * R + k;
#pragma unroll
        for (int r = 0; r < R; ++r) dst[at + r * Ns] = v[r];
        b += db;
        k += dk;
        if (k >= Ns) {
            k -= Ns;
            ++b;
        }
    }
}

// inverse FFT of buf (length M, unnormalised); returns the buffer holding the result
__device__ float2* inverse_fft(float2* buf, float2* other, int M, const int* radix, int passes,
                               const float2* twiddle) {
    int Ns = 1;
    for (int p = 0; p < passes; ++p) {
        const int R = radix[p];
        switch (R) {
            case 2: stockham_pass<2>(buf, other, M, Ns, twiddle); break;
            case 3: stockham_pass<3>(buf, other, M, Ns, twiddle); break;
            case 4: stockham_pass<4>(buf, other, M, Ns, twiddle); break;
            case 5: stockham_pass<5>(buf, other, M, Ns, twiddle); break;
            case 6: stockham_pass<6>(buf, other, M, Ns, twiddle); break;
            case 8: stockham_pass<8>(buf, other, M, Ns, twiddle); break;
            case 9: stockham_pass<9>(buf, other, M, Ns, twiddle); break;
            case 10: stockham_pass<10>(buf, other, M, Ns, twiddle); break;
            case 12: stockham_pass<12>(buf, other, M, Ns, twiddle); break;
            case 15: stockham_pass<15>(buf, other, M, Ns, twiddle); break;
            case 16: stockham_pass<16>(buf, other, M, Ns, twiddle); break;
            case 18: stockham_pass<18>(buf, other, M, Ns, twiddle); break;
        }
        __syncthreads();
        float2* t = buf;
        buf = other;
        other = t;
        Ns *= R;
    }
    return buf;
}

// The screen is float32. A shift's box depth comes from q, the float32 prefix sums of 1 - F:
// |box32 - TLS's float64 box| <= margin = K / d + 3 eps64 (K per period, fft_study.box_prefix),
// so a shift is surely listed (2) above depth_min + margin and perhaps (1) within it, and
// |k32 - k| <= dk = |ks| margin. With the float32 AR's allowance e (|ar - AR| <= e, proven by
// fft_bound.error_scale for these passes), the gain
// G = k (2 AR - k A2) is within
//     P = 2 |k| e + 2 dk (|ar| + e) + dk (2 |k| + dk) A2
// of its float32 value; SCREEN_ROUNDING (1 + SR) P + SR (|t1| + t2) also covers float32's
// rounding of k, ar, the gain, the pad and gain -/+ pad (< 10 eps32 of those terms). As a
// polynomial in |k| and |2 ar| with per-pair coefficients:
//     pad = c0 + |2 ar| (ca + cka |k|) + |k| (ck + ckk |k|).
#define SCREEN_ROUNDING 4e-6

struct Width {
    int d, stride;
    float inv_d, ks, a2w;
    float listed_above, maybe_above;
    float c0, ca, cka, ck, ckk;
};

__device__ __forceinline__ float round_up(double x) { return __double2float_ru(x * (1.0 + 1e-9)); }

__device__ __forceinline__ Width width_of(int w, const int* widths, const int* strides, const double* inv_width,
                                          const double* kscale, const double* a2, double box_error,
                                          double depth_min, float e) {
    const double margin = box_error * inv_width[w] * (1.0 + 1e-12) + 3.0 * 2.220446049250313e-16;
    const double ks = kscale[w], dk = fabs(ks) * margin * (1.0 + 1e-12), sr = SCREEN_ROUNDING;
    const double a2w = (float)a2[w];  // the float32 A2 the gains use
    return Width{widths[w], strides[w], (float)inv_width[w], (float)ks, (float)a2w,
                 __double2float_ru(depth_min + margin), __double2float_rd(depth_min - margin),
                 round_up((1 + sr) * (2 * dk * e + dk * dk * a2w)), round_up((1 + sr) * dk), round_up(sr),
                 round_up((1 + sr) * (2 * e + 2 * dk * a2w)), round_up(sr * a2w)};
}

struct ScreenedShift {
    float gain, pad;
    int listed;
};

__device__ __forceinline__ ScreenedShift screen(const Width& wd, int s, const float* q, const float2* z, int side,
                                                int circular, int n, float two_over_m) {
    const int i = s * wd.stride;
    const float box = (q[i + wd.d] - q[i]) * wd.inv_d;
    const float k = box * wd.ks, kk = fabsf(k);
    const float2 zz = z[circular && i >= n ? i - n : i];
    const float ar2 = (side ? zz.y : zz.x) * two_over_m;
    return ScreenedShift{k * fmaf(-k, wd.a2w, ar2),
                         fmaf(kk, fmaf(wd.ckk, kk, wd.ck), fmaf(fabsf(ar2), fmaf(wd.cka, kk, wd.ca), wd.c0)),
                         box > wd.listed_above ? 2 : box > wd.maybe_above ? 1 : 0};
}

// visit(side, s, screened shift) for every shift of a pair's two widths, both in one iteration
template <class Visit>
__device__ __forceinline__ void sweep_pair(const Width* wd, const int* shifts_of, const float* q, const float2* z,
                                           int circular, int n, float two_over_m, Visit visit) {
    for (int s = threadIdx.x; s < max(shifts_of[0], shifts_of[1]); s += THREADS) {
#pragma unroll
        for (int side = 0; side < 2; ++side)
            if (s < shifts_of[side]) visit(side, s, screen(wd[side], s, q, z, side, circular, n, two_over_m));
    }
}

__device__ __forceinline__ void enqueue(Candidate* queue, int* queued, const ScreenedShift& g, int w, int s) {
    const int at = atomicAdd(queued, 1);
    if (at < QUEUE) queue[at] = Candidate{g.gain + g.pad, w, s};
}

__device__ double block_max(double x, double* scratch) {
    for (int o = 16; o > 0; o >>= 1) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, o));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    x = lane < THREADS / 32 ? scratch[lane] : NEG_INF;
    for (int o = 16; o > 0; o >>= 1) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) fft_scan(
    float2* __restrict__ U, const float2* __restrict__ A, const double* __restrict__ cs,
    const float* __restrict__ qs, const double* __restrict__ box_error,
    const double* __restrict__ u, const double* __restrict__ unorm, const int* __restrict__ lo,
    const int* __restrict__ nd, const int* __restrict__ widths, const int* __restrict__ strides,
    const double* __restrict__ inv_width,
    const int* __restrict__ n_shifts, const long long* __restrict__ offsets, const double* __restrict__ a,
    const double* __restrict__ kscale, const double* __restrict__ a2, const double* __restrict__ a1,
    const float2* __restrict__ twiddle, const int* __restrict__ radix, int passes, int M, int n, int m,
    int circular, double depth_min, double escale, int stages, double* __restrict__ best_gain,
    int* __restrict__ best_wi, int* __restrict__ best_shift, int* __restrict__ n_rechecked,
    int* __restrict__ overflow, int* __restrict__ n_resweeps) {
    extern __shared__ float2 smem[];
    float2* buf0 = smem;
    float2* buf1 = smem + M;
    const float* source = qs + (unsigned long long)blockIdx.x * (m + 1);
#ifdef CS_GLOBAL  // the screen's prefix sums q (m + 1) read through L1
    const float* q = source;
    Candidate* queue = reinterpret_cast<Candidate*>(smem + 2 * M);
#else  // copied to shared memory
    float* q = reinterpret_cast<float*>(smem + 2 * M);
    Candidate* queue = reinterpret_cast<Candidate*>(smem + 2 * M + ((m + 1) * sizeof(float) + 15) / 16 * 2);
#endif
    const double* csp = cs + (unsigned long long)blockIdx.x * (m + 1);  // the re-check's
    __shared__ double scratch[THREADS / 32];
    __shared__ double threshold;
    __shared__ int queued, lost, resweeps;
    __shared__ int radix_s[MAX_PASSES];

    const int p = blockIdx.x, tid = threadIdx.x, H = M / 2 + 1;
    float2* Up = U + (unsigned long long)p * H;  // this period's rfft, made below
    const double* up = u + (unsigned long long)p * m;
    const float two_over_m = 2.f / M;
#ifndef CS_GLOBAL
    for (int i = tid; i <= m; i += THREADS) q[i] = source[i];
#endif
    if (tid < passes) radix_s[tid] = radix[tid];
    if (tid == 0) {
        threshold = NEG_INF;
        queued = lost = resweeps = 0;
    }
    // the fold's spectrum: rfft(v)_k = conj(ifft(v)_k) for the real fold v in float32 (u, zero-padded
    // to M where M > n), both unnormalised
    for (int i = tid; i < M; i += THREADS) buf0[i] = make_float2(i < (circular ? n : m) ? (float)up[i] : 0.f, 0.f);
    __syncthreads();
    const float2* spectrum = inverse_fft(buf0, buf1, M, radix_s, passes, twiddle);
    for (int k = tid; k < H; k += THREADS) Up[k] = make_float2(spectrum[k].x, -spectrum[k].y);
    __syncthreads();

    for (int first = 0; first < nd[p]; first += 2) {
        const int w1 = lo[p] + first, w2 = first + 1 < nd[p] ? w1 + 1 : -1;
        // Z_k = P1_k + i P2_k and, from the Hermitian halves, Z_(M-k) = conj(P1_k) + i conj(P2_k)
        for (int k = tid; k < H; k += THREADS) {
            const float2 uk = Up[k];
            const float2 p1 = cmul(uk, __ldg(&A[(unsigned long long)w1 * H + k]));
            const float2 p2 = w2 >= 0 ? cmul(uk, __ldg(&A[(unsigned long long)w2 * H + k])) : make_float2(0.f, 0.f);
            buf0[k] = make_float2(p1.x - p2.y, p1.y + p2.x);
            if (k > 0 && 2 * k != M) buf0[M - k] = make_float2(p1.x + p2.y, p2.x - p1.y);
        }
        __syncthreads();
        const float2* z = stages > 0 ? inverse_fft(buf0, buf1, M, radix_s, passes, twiddle) : buf0;
        const float e = (float)(escale * unorm[p] * (a1[w1] + (w2 >= 0 ? a1[w2] : 0.0)));
        if (stages < 2) {  // for timing: the spectra alone (0) or with the transforms (1)
            if (tid == 0 && z[0].x == 12345.0f) lost = 1;
            __syncthreads();
            continue;
        }

        // One sweep over both widths' shifts (two independent chains per iteration): the best
        // lower gain, and into the queue every shift whose upper gain reaches the threshold of the
        // pairs before. Before the first pair has set one (nothing to queue against), or if the
        // queue overflows, the queue keeps what reaches the new threshold and this pair's shifts
        // are queued again against it.
        const int w_of[2] = {w1, w2};
        const Width wd[2] = {width_of(w1, widths, strides, inv_width, kscale, a2, box_error[p], depth_min, e),
                             width_of(w2 >= 0 ? w2 : w1, widths, strides, inv_width, kscale, a2, box_error[p],
                                      depth_min, e)};
        const int shifts_of[2] = {n_shifts[w1], w2 >= 0 ? n_shifts[w2] : 0};
        const bool seeded = threshold > NEG_INF;
        // float32 bounds against it, rounded down (nothing reaches it before it is set)
        const float t_before = seeded ? __double2float_rd(threshold) : __int_as_float(0x7f800000);
        const int queued_before = queued;
        float lower = NEG_INF;
        sweep_pair(wd, shifts_of, q, z, circular, n, two_over_m, [&](int side, int s, ScreenedShift g) {
            if (g.listed == 2) lower = fmaxf(lower, g.gain - g.pad);
            if (g.listed && g.gain + g.pad >= t_before) enqueue(queue, &queued, g, w_of[side], s);
        });
        const double block_lower = block_max(lower, scratch);
        if (tid == 0) threshold = fmax(threshold, block_lower);
        __syncthreads();
        if (queued > QUEUE || !seeded) {
            if (tid == 0) ++resweeps;
            const double t = threshold;
            const float t_screen = __double2float_rd(t);
            __syncthreads();
            if (tid == 0) {
                int kept = 0;
                for (int c = 0; c < min(queued_before, QUEUE); ++c)
                    if (queue[c].upper >= t) queue[kept++] = queue[c];
                queued = kept;
            }
            __syncthreads();
            sweep_pair(wd, shifts_of, q, z, circular, n, two_over_m, [&](int side, int s, ScreenedShift g) {
                if (g.listed && g.gain + g.pad >= t_screen) enqueue(queue, &queued, g, w_of[side], s);
            });
            __syncthreads();
            if (tid == 0 && queued > QUEUE) {  // shifts that could win were dropped: the period is not exact
                lost = 1;
                queued = QUEUE;
            }
        }
        __syncthreads();
    }

    // float64 re-check of the queued shifts that reach the final threshold, one warp each
    const int total = min(queued, QUEUE), warp = tid / 32, lane = tid % 32;
    const double t = threshold;
    double best = NEG_INF;
    int best_w = 1 << 30, best_s = 0, rechecked = 0;
    for (int c = warp; c < total; c += THREADS / 32) {
        const Candidate cand = queue[c];
        if (cand.upper < t) continue;
        const int w = cand.wi, i = cand.shift * strides[w], d = widths[w];
        const long long first = offsets[w], length = offsets[w + 1] - first;
        double dot = 0.0;
        for (long long j = lane; j < length; j += 32) dot += a[first + j] * up[i + j];
        for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        const double box = 1.0 - (csp[i + d] - csp[i]) / d, k = box * kscale[w];
        const double g = box > depth_min ? 2.0 * k * dot - k * k * a2[w] : NEG_INF;
        ++rechecked;
        if (g > best || (g == best && (w < best_w || (w == best_w && cand.shift < best_s)))) {
            best = g;
            best_w = w;
            best_s = cand.shift;
        }
    }
    // block argmax over the warps' bests (lane 0 of each holds its warp's)
    __shared__ double g_s[THREADS / 32];
    __shared__ int w_s[THREADS / 32], s_s[THREADS / 32], r_s[THREADS / 32];
    if (lane == 0) {
        g_s[warp] = best;
        w_s[warp] = best_w;
        s_s[warp] = best_s;
        r_s[warp] = rechecked;
    }
    __syncthreads();
    if (tid == 0) {
        int count = 0;
        for (int x = 0; x < THREADS / 32; ++x) {
            count += r_s[x];
            if (g_s[x] > best || (g_s[x] == best && (w_s[x] < best_w || (w_s[x] == best_w && s_s[x] < best_s)))) {
                best = g_s[x];
                best_w = w_s[x];
                best_s = s_s[x];
            }
        }
        best_gain[p] = best;
        best_wi[p] = best == NEG_INF ? -1 : best_w;
        best_shift[p] = best == NEG_INF ? 0 : best_s * strides[best_w];
        n_rechecked[p] = count;
        overflow[p] = lost;
        n_resweeps[p] = resweeps;
    }
}
