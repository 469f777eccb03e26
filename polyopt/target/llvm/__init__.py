"""The LLVM backend: loop ASTs to native code through llvmlite (JIT for the host CPU)."""
