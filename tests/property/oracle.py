def family_handwritten(rng, script):
    return "ok-refused todo"
