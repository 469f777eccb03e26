#include <math.h>
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min(a, b) ((a) < (b) ? (a) : (b))
void guarded(int n, int m, double alpha, double B[n][m], double C[n][m])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = max(0, i - 2); j < min(m, i + 3); j += 2) {
      if (i % 2 == 0 && j > 0)
        C[i][j] = sqrt(B[i][j]) * alpha + C[i][j - 1];
      else
        C[i][j] -= fabs(B[i][j] - 1.0) / 3.0;
    }
#pragma endscop
}
