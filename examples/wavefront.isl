{ S0[t, i, j] -> [2t + i, t, i, j] }
