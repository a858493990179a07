"""What a run tells about itself: the reports stage that writes evaluators' reports, the filled
recipe, the signature and ``manifest.json`` (:mod:`.run_reports`); the ``report.html`` page
(:mod:`.html`); and the summary table and warnings printed at the end of a run (:mod:`.summary`)."""
