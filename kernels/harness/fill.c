/* The harness's own poison fill for timed calls (trusted code, built once per host and
 * compiler by kernels/harness/fill.py, loaded by the timing child before isolation).
 *
 * Before every timed call the output is filled with a fresh quiet NaN. Filled through the
 * cache, as numpy's fill does, the last ~L3 of it is left dirty in the cache, and the timed
 * call then pays to write the harness's poison back to DRAM while it streams its own output:
 * a cost of the harness, the same in absolute terms for every implementation, so it shrinks
 * the measured speedup of exactly the fast, memory-bound kernels. Streaming stores put the
 * poison in DRAM and leave no line of the output in the cache, dirty or clean. */
#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

void i21_fill_nt(uint32_t *p, size_t n, uint32_t word) {
    size_t i = 0;
#if defined(__x86_64__) || defined(__i386__)
    for (; i < n && ((uintptr_t)(p + i) & 15); i++) p[i] = word;
    const __m128i v = _mm_set1_epi32((int)word);
    for (; i + 16 <= n; i += 16) {
        _mm_stream_si128((__m128i *)(p + i), v);
        _mm_stream_si128((__m128i *)(p + i + 4), v);
        _mm_stream_si128((__m128i *)(p + i + 8), v);
        _mm_stream_si128((__m128i *)(p + i + 12), v);
    }
    for (; i + 4 <= n; i += 4) _mm_stream_si128((__m128i *)(p + i), v);
    _mm_sfence();
#endif
    for (; i < n; i++) p[i] = word;
}
