/* writes row 0: needs n >= 1 (sizes inferred from the array bounds) */
void first_row(int n, int m, double A[n][m])
{
  int j;
#pragma scop
  for (j = 0; j < m; j++)
    A[0][j] = A[0][j] * 2.0 + 1.0;
#pragma endscop
}
