/* integer arrays: division and modulo, pow, fmax, a ternary that is not min/max */
void int_math(int n, int P[n], double X[n], double Y[n])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++) {
    P[i] = (P[i] * 7 + i) / 3 + (i % 4);
    Y[i] = pow(X[i], 3) + fmax(X[i], 1.0) + (i < 5 ? X[i] : -X[i]);
  }
#pragma endscop
}
