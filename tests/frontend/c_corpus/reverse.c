/* back substitution: a decreasing loop and a scalar accumulator */
void backsub(int n, double U[n][n], double b[n], double x[n])
{
  int i, j;
  double w;
#pragma scop
  for (i = n - 1; i >= 0; i--) {
    w = b[i];
    for (j = i + 1; j < n; j++)
      w -= U[i][j] * x[j];
    x[i] = w / U[i][i];
  }
#pragma endscop
}
