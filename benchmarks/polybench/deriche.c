/* deriche: Deriche's recursive edge-detection filter, horizontal then vertical passes
   (each a causal and an anti-causal recursion, summed) */
#include <math.h>
#ifndef W
# define W 4096
# define H 2160
#endif
void kernel_deriche(int w, int h, double alpha, double imgIn[W][H], double imgOut[W][H],
                    double y1[W][H], double y2[W][H])
{
  int i, j;
  double xm1, tm1, ym1, ym2, xp1, xp2, tp1, tp2, yp1, yp2;
  double k, a1, a2, a3, a4, a5, a6, a7, a8, b1, b2, c1, c2;
#pragma scop
  k = (1.0 - exp(-alpha)) * (1.0 - exp(-alpha))
      / (1.0 + 2.0 * alpha * exp(-alpha) - exp(-2.0 * alpha));
  a1 = k;
  a5 = k;
  a2 = k * exp(-alpha) * (alpha - 1.0);
  a6 = a2;
  a3 = k * exp(-alpha) * (alpha + 1.0);
  a7 = a3;
  a4 = -k * exp(-2.0 * alpha);
  a8 = a4;
  b1 = exp(-alpha * log(2.0));  /* 2 to the power -alpha */
  b2 = -exp(-2.0 * alpha);
  c1 = 1.0;
  c2 = 1.0;
  for (i = 0; i < w; i++) {
    ym1 = 0.0;
    ym2 = 0.0;
    xm1 = 0.0;
    for (j = 0; j < h; j++) {
      y1[i][j] = a1 * imgIn[i][j] + a2 * xm1 + b1 * ym1 + b2 * ym2;
      xm1 = imgIn[i][j];
      ym2 = ym1;
      ym1 = y1[i][j];
    }
  }
  for (i = 0; i < w; i++) {
    yp1 = 0.0;
    yp2 = 0.0;
    xp1 = 0.0;
    xp2 = 0.0;
    for (j = h - 1; j >= 0; j--) {
      y2[i][j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2;
      xp2 = xp1;
      xp1 = imgIn[i][j];
      yp2 = yp1;
      yp1 = y2[i][j];
    }
  }
  for (i = 0; i < w; i++)
    for (j = 0; j < h; j++)
      imgOut[i][j] = c1 * (y1[i][j] + y2[i][j]);
  for (j = 0; j < h; j++) {
    tm1 = 0.0;
    ym1 = 0.0;
    ym2 = 0.0;
    for (i = 0; i < w; i++) {
      y1[i][j] = a5 * imgOut[i][j] + a6 * tm1 + b1 * ym1 + b2 * ym2;
      tm1 = imgOut[i][j];
      ym2 = ym1;
      ym1 = y1[i][j];
    }
  }
  for (j = 0; j < h; j++) {
    tp1 = 0.0;
    tp2 = 0.0;
    yp1 = 0.0;
    yp2 = 0.0;
    for (i = w - 1; i >= 0; i--) {
      y2[i][j] = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2;
      tp2 = tp1;
      tp1 = imgOut[i][j];
      yp2 = yp1;
      yp1 = y2[i][j];
    }
  }
  for (i = 0; i < w; i++)
    for (j = 0; j < h; j++)
      imgOut[i][j] = c2 * (y1[i][j] + y2[i][j]);
#pragma endscop
}
