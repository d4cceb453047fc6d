"""Benchmark harness and the LeRobot-layout baseline."""
