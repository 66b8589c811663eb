#!/usr/bin/env python3
"""Writes the reference .npy files used by tests/test_npy.cpp with numpy.save.

The files are committed; the test suite does not need Python. Re-run from this directory
(python3 make_npy_reference.py) only to regenerate them.
"""
import numpy as np

# Files recur must read, and (for the supported dtypes) write byte for byte.
np.save("ref_f32_2x3.npy", (np.arange(6, dtype="<f4").reshape(2, 3) - 2.5) / 4)
np.save("ref_f64_0d.npy", np.array(-3.25, dtype="<f8"))
np.save("ref_i64_5.npy", np.array([-2, -1, 0, 1, 2**40], dtype="<i8"))
np.save("ref_f64_0x3.npy", np.zeros((0, 3), dtype="<f8"))
# Rank 15: numpy's spare room for growing axis 0 pushes this header past 128 bytes.
np.save("ref_f64_rank15.npy", np.arange(3.0).reshape((1,) * 14 + (3,)))
np.save("ref_f32_2x1x2.npy", np.array([[[1.5, -0.0]], [[np.inf, 7.0]]], dtype="<f4"))

# Files recur must reject with DTypeError.
np.save("ref_i4_3.npy", np.array([1, 2, 3], dtype="<i4"))
np.save("ref_f8_big_endian_2.npy", np.array([1.0, 2.0], dtype=">f8"))
np.save("ref_f4_fortran_2x3.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
