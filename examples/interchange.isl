{ S0[t, i, j] -> [i, t, j] }
