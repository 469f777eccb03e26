def family_bad_input(rng, script):
    return "ok-refused todo"
