"""Front end for in-place affine loop nests written as Python functions (``po.kernel``)."""
