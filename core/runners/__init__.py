"""Execution backends. ``local`` streams batches through the steps in this process."""
