/* syrk: C := alpha A A^T + beta C, lower triangle */
#ifndef M
# define M 1000
# define N 1200
#endif
void kernel_syrk(int n, int m, double alpha, double beta, double C[N][N], double A[N][M])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < n; i++) {
    for (j = 0; j <= i; j++)
      C[i][j] *= beta;
    for (k = 0; k < m; k++)
      for (j = 0; j <= i; j++)
        C[i][j] += alpha * A[i][k] * A[j][k];
  }
#pragma endscop
}
