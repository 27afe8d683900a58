"""Measuring on a real GPU (calibrate, bench) and checking predictions against measurements (validate).

Only validate.py and records.py run without a GPU; everything that times imports CuPy lazily.
"""
