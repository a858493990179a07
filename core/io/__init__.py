"""Files in and out: corpora read and written as columnar batches (:mod:`.corpus`), the shards of
a resumable run (:mod:`.shards`), and the OpusTrainer configuration of a run's output
(:mod:`.opustrainer`)."""
