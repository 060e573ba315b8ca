// This machine's fp32 peak: 12 independent FMA chains in registers on every core, with AVX-512
// where the compiler targets it and AVX2 always (/work/shared/recipes/peak_fma.c, the AVX-512
// half guarded so that a CPU without it still builds). Build: gcc -O3 -march=native -fopenmp
// peak_fma.c -o peak_fma ; run: OMP_NUM_THREADS=<cores> ./peak_fma ITERS REPEATS
// Prints: "avx512 <GFLOPS or 0> avx2 <GFLOPS>".
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define CHAINS(T, SET, FMA, ADD)                                                              \
  T a0 = SET(0), a1 = SET(1), a2 = SET(2), a3 = SET(3), a4 = SET(4), a5 = SET(5), a6 = SET(6),  \
    a7 = SET(7), a8 = SET(8), a9 = SET(9), a10 = SET(10), a11 = SET(11);                        \
  T b = SET(1.0000001f), c = SET(1e-7f);                                                      \
  for (long k = 0; k < iters; k++) {                                                          \
    a0 = FMA(a0, b, c); a1 = FMA(a1, b, c); a2 = FMA(a2, b, c); a3 = FMA(a3, b, c);            \
    a4 = FMA(a4, b, c); a5 = FMA(a5, b, c); a6 = FMA(a6, b, c); a7 = FMA(a7, b, c);            \
    a8 = FMA(a8, b, c); a9 = FMA(a9, b, c); a10 = FMA(a10, b, c); a11 = FMA(a11, b, c);        \
  }                                                                                           \
  T s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));                    \
  s = ADD(s, ADD(ADD(a8, a9), ADD(a10, a11)));
#ifdef __AVX512F__
static double run512(long iters) {
  float sink = 0; double t0 = omp_get_wtime();
#pragma omp parallel reduction(+:sink)
  { CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps) sink += _mm512_reduce_add_ps(s); }
  double t = omp_get_wtime() - t0; if (sink == 42) printf(" ");
  return 2.0 * 16 * 12 * iters * omp_get_max_threads() / t / 1e9;
}
#else
static double run512(long iters) { (void)iters; return 0.0; }
#endif
static double run256(long iters) {
  float sink = 0; double t0 = omp_get_wtime();
#pragma omp parallel reduction(+:sink)
  { CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps)
    float tmp[8]; _mm256_storeu_ps(tmp, s); for (int j = 0; j < 8; j++) sink += tmp[j]; }
  double t = omp_get_wtime() - t0; if (sink == 42) printf(" ");
  return 2.0 * 8 * 12 * iters * omp_get_max_threads() / t / 1e9;
}
int main(int argc, char **argv) {
  long it = argc > 1 ? atol(argv[1]) : 100000000L;
  int repeats = argc > 2 ? atoi(argv[2]) : 5;
  double b512 = 0, b256 = 0;
  for (int r = 0; r < repeats; r++) {
    double x = run512(it); if (x > b512) b512 = x;
    double y = run256(it); if (y > b256) b256 = y;
  }
  printf("avx512 %.2f avx2 %.2f threads %d\n", b512, b256, omp_get_max_threads());
  return 0;
}
