/* A local scratch array, a forward-substituted scalar and an accumulator scalar. */
void locals(int n, double A[n][n], double s[n])
{
  int i, j;
  double tmp[n];
  double acc;
#pragma scop
  for (i = 0; i < n; i++) {
    double scale = A[i][i] + 1.0;
    tmp[i] = 0.0;
    for (j = 0; j < n; j++)
      tmp[i] += A[i][j] / scale;
  }
  acc = 0.0;
  for (i = 0; i < n; i++) {
    acc += tmp[i];
    s[i] = acc;
  }
#pragma endscop
}
