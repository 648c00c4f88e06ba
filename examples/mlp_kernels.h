/*
 * mlp_kernels.h - the numeric kernels the example MLPs share
 * (examples/train_mlp.c, examples/mpi/train_mlp_mpi.c): a seeded random
 * source and a dense layer forward and backward. Plain C, no trainprof:
 * what the examples profile is around these calls.
 */
#ifndef TP_EXAMPLES_MLP_KERNELS_H
#define TP_EXAMPLES_MLP_KERNELS_H

#include <math.h>

/* Uniform in [0, 1) from a linear congruential state (same on every platform). */
static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffffff) / 16777216.0f;
}

/* Standard normal (Box-Muller). */
static float gauss(unsigned *s)
{
    float u = frand(s) + 1e-7f, v = frand(s);
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

/* y[n][o] = act(b[o] + sum_i w[o][i] * x[n][i]) */
static void dense(int n, int in, int out, const float *x, const float *w, const float *b, float *y,
                  int relu)
{
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out; o++) {
            float v = b[o];
            for (int i = 0; i < in; i++)
                v += w[o * in + i] * x[r * in + i];
            y[r * out + o] = relu && v < 0 ? 0 : v;
        }
}

/* Gradient of one dense layer: gw += dy^T x, gb += dy, dx = dy w (masked by
 * relu of x; dx NULL for the first layer). */
static void dense_back(int n, int in, int out, const float *x, const float *w, const float *dy,
                       float *gw, float *gb, float *dx)
{
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out; o++) {
            float d = dy[r * out + o];
            if (d == 0)
                continue;
            gb[o] += d;
            for (int i = 0; i < in; i++)
                gw[o * in + i] += d * x[r * in + i];
        }
    if (!dx)
        return;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < in; i++) {
            float v = 0;
            if (x[r * in + i] > 0)
                for (int o = 0; o < out; o++)
                    v += dy[r * out + o] * w[o * in + i];
            dx[r * in + i] = v;
        }
}

#endif
