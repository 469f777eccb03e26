/* symm: C := alpha*A*B + beta*C with A symmetric, only its lower triangle read */
#ifndef M
# define M 1000
# define N 1200
#endif
void kernel_symm(int m, int n, double alpha, double beta, double C[M][N], double A[M][M],
                 double B[M][N])
{
  int i, j, k;
  double acc;
#pragma scop
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++) {
      acc = 0.0;
      for (k = 0; k < i; k++) {
        C[k][j] += alpha * B[i][j] * A[i][k];
        acc += B[k][j] * A[i][k];
      }
      C[i][j] = beta * C[i][j] + alpha * B[i][j] * A[i][i] + alpha * acc;
    }
#pragma endscop
}
