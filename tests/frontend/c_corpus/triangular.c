/* Triangular, imperfectly nested, several statements: Cholesky-like update. */
void triangular(int n, double A[n][n], double x[n], double y[n])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++) {
    y[i] = 0.0;
    for (j = 0; j <= i; j++)
      y[i] += A[i][j] * x[j];
    for (j = i + 1; j < n; j++)
      A[i][j] = A[j][i] * 0.5 + y[i];
  }
#pragma endscop
}
