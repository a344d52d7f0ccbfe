"""What a scoring run is asked and what it answers: the options (declared once), the result and
its evidence, and the text of its reasons. Above the dimensions (whose settings the options
carry) and the judge; below the pipeline."""
