// Profile builds (-DSTAGE_CLOCKS; scripts/profile_pruned.py --clocks): SM
// cycles of a kernel's stages summed over its blocks in stage_clocks, one
// slot a stage. The including source names its slots first, in an enum ending
// N_CLOCKS; thread 0 adds the cycles since ``mark`` (after a barrier, so they
// are the whole block's) and moves the mark on; a mark in shared memory
// (CLOCK_SHARED, read by every warp after a barrier) holds no register across
// a long stage. Without STAGE_CLOCKS the marks compile to nothing.
#pragma once
#ifdef STAGE_CLOCKS
__device__ unsigned long long stage_clocks[N_CLOCKS];
#define CLOCK_MARK(mark) long long mark = clock64()
#define CLOCK_SHARED(mark) __shared__ long long mark; if (threadIdx.x == 0) mark = clock64() /* no register held */
#define CLOCK_COUNT(slot) if (threadIdx.x == 0) atomicAdd(stage_clocks + (slot), 1ull)
#define CLOCK_ADD(slot, mark)                                                                    \
    if (threadIdx.x == 0) {                                                                       \
        const long long now = clock64();                                                          \
        atomicAdd(stage_clocks + (slot), (unsigned long long)(now - (mark)));                     \
        mark = now;                                                                               \
    }
#define CLOCK_WARP(slot, mark) /* each warp's own cycles since its mark */                         \
    if (threadIdx.x % 32 == 0) atomicAdd(stage_clocks + (slot), (unsigned long long)(clock64() - (mark)))
#else
#define CLOCK_MARK(mark)
#define CLOCK_SHARED(mark)
#define CLOCK_ADD(slot, mark)
#define CLOCK_COUNT(slot)
#define CLOCK_WARP(slot, mark)
#endif
