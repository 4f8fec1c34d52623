// The fp32 FMA peak of this CPU on 1 and 2 threads: the bound the model benchmarks' products
// (dynamic.py, e2e.py) are measured against. Twelve independent chains of vector FMAs per thread
// keep both FMA ports busy through their latency.
//   gcc -O2 -march=native -pthread benchmarks/fma_peak.c -o /tmp/fma_peak && /tmp/fma_peak
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#ifdef __AVX512F__
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define STORE _mm512_storeu_ps
#else
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define STORE _mm256_storeu_ps
#endif

enum { kChains = 12 };
static const long kIterations = 200000000;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void* chains(void* sink) {
  vec a[kChains], b = SET1(1.0000001f), c = SET1(1e-9f);
  for (int i = 0; i < kChains; i++) a[i] = SET1((float)i);
  for (long k = 0; k < kIterations; k++)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; i++) a[i] = FMA(a[i], b, c);
  float out[LANES];
  for (int i = 0; i < kChains; i++) {  // the results are used, so no chain is optimized away
    STORE(out, a[i]);
    *(float*)sink += out[0];
  }
  return NULL;
}

int main(void) {
  for (int threads = 1; threads <= 2; threads++) {
    pthread_t t[2];
    float sink[2] = {0, 0};
    const double t0 = now();
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, chains, &sink[i]);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    const double flops = 2.0 * threads * kIterations * kChains * LANES;
    printf("fp32 FMA peak, %d thread%s, %d-lane vectors: %.1f GFLOP/s\n", threads, threads > 1 ? "s" : "",
           LANES, flops / (now() - t0) / 1e9);
  }
  return 0;
}
