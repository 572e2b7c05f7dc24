/* The harness's own streaming stores for the timing child (trusted code, built once per host
 * and compiler by kernels/harness/fill.py, loaded by the timing child before isolation).
 *
 * i21_fill_nt: before every timed call the output is filled with a fresh quiet NaN. Filled
 * through the cache, as numpy's fill does, the last ~L3 of it is left dirty in the cache,
 * and the timed call then pays to write the harness's poison back to DRAM while it streams
 * its own output: a cost of the harness, the same in absolute terms for every
 * implementation, so it shrinks the measured speedup of exactly the fast, memory-bound
 * kernels. Streaming stores put the poison in DRAM and leave no line of it in the cache.
 *
 * i21_copy_nt: the same for the inputs the child rotates between the two timing data sets,
 * and the session's copy probe: a streaming copy timed interleaved with the candidate, the
 * memory system's pace in the very minute the candidate was timed. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define I21_NT 1
#endif

void i21_fill_nt(uint32_t *p, size_t n, uint32_t word) {
    size_t i = 0;
#ifdef I21_NT
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

void i21_copy_nt(void *dst, const void *src, size_t bytes, int threads) {
    char *d = dst;
    const char *s = src;
#ifdef I21_NT
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > bytes) head = bytes;
    memcpy(d, s, head);
    d += head; s += head; bytes -= head;
    const size_t blocks = bytes / 64;
    #pragma omp parallel num_threads(threads > 0 ? threads : 1)
    {
        #pragma omp for schedule(static)
        for (size_t b = 0; b < blocks; b++) {
            const __m128i *from = (const __m128i *)(s + 64 * b);
            __m128i *to = (__m128i *)(d + 64 * b);
            __m128i v0 = _mm_loadu_si128(from), v1 = _mm_loadu_si128(from + 1);
            __m128i v2 = _mm_loadu_si128(from + 2), v3 = _mm_loadu_si128(from + 3);
            _mm_stream_si128(to, v0); _mm_stream_si128(to + 1, v1);
            _mm_stream_si128(to + 2, v2); _mm_stream_si128(to + 3, v3);
        }
        _mm_sfence();
    }
    d += 64 * blocks; s += 64 * blocks; bytes -= 64 * blocks;
#else
    (void)threads;
#endif
    memcpy(d, s, bytes);
}
