/* adi: alternating direction implicit solver of 2-D heat diffusion
   (a column sweep, then a row sweep, each a tridiagonal solve per line) */
#ifndef N
# define TSTEPS 500
# define N 1000
#endif
void kernel_adi(int tsteps, int n, double u[N][N], double v[N][N], double p[N][N],
                double q[N][N])
{
  int t, i, j;
  double dx, dy, dt, c1, c2, a, b, c, d, e, f;
#pragma scop
  dx = 1.0 / n;
  dy = 1.0 / n;
  dt = 1.0 / tsteps;
  c1 = 2.0 * dt / (dx * dx);
  c2 = 1.0 * dt / (dy * dy);
  a = -c1 / 2.0;
  b = 1.0 + c1;
  c = a;
  d = -c2 / 2.0;
  e = 1.0 + c2;
  f = d;
  for (t = 1; t <= tsteps; t++) {
    for (i = 1; i < n - 1; i++) {
      v[0][i] = 1.0;
      p[i][0] = 0.0;
      q[i][0] = v[0][i];
      for (j = 1; j < n - 1; j++) {
        p[i][j] = -c / (a * p[i][j - 1] + b);
        q[i][j] = (-d * u[j][i - 1] + (1.0 + 2.0 * d) * u[j][i] - f * u[j][i + 1]
                   - a * q[i][j - 1]) / (a * p[i][j - 1] + b);
      }
      v[n - 1][i] = 1.0;
      for (j = n - 2; j >= 1; j--)
        v[j][i] = p[i][j] * v[j + 1][i] + q[i][j];
    }
    for (i = 1; i < n - 1; i++) {
      u[i][0] = 1.0;
      p[i][0] = 0.0;
      q[i][0] = u[i][0];
      for (j = 1; j < n - 1; j++) {
        p[i][j] = -f / (d * p[i][j - 1] + e);
        q[i][j] = (-a * v[i - 1][j] + (1.0 + 2.0 * a) * v[i][j] - c * v[i + 1][j]
                   - d * q[i][j - 1]) / (d * p[i][j - 1] + e);
      }
      u[i][n - 1] = 1.0;
      for (j = n - 2; j >= 1; j--)
        u[i][j] = p[i][j] * u[i][j + 1] + q[i][j];
    }
  }
#pragma endscop
}
