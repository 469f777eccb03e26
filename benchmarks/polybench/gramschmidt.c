/* gramschmidt: QR decomposition by modified Gram-Schmidt, A (M x N) = Q R */
#include <math.h>
#ifndef M
# define M 1000
# define N 1200
#endif
void kernel_gramschmidt(int m, int n, double A[M][N], double R[N][N], double Q[M][N])
{
  int i, j, k;
  double norm;
#pragma scop
  for (k = 0; k < n; k++) {
    norm = 0.0;
    for (i = 0; i < m; i++)
      norm += A[i][k] * A[i][k];
    R[k][k] = sqrt(norm);
    for (i = 0; i < m; i++)
      Q[i][k] = A[i][k] / R[k][k];
    for (j = k + 1; j < n; j++) {
      R[k][j] = 0.0;
      for (i = 0; i < m; i++)
        R[k][j] += Q[i][k] * A[i][j];
      for (i = 0; i < m; i++)
        A[i][j] = A[i][j] - Q[i][k] * R[k][j];
    }
  }
#pragma endscop
}
