"""Analysis of scores already made: paired comparison, agreement with people, stability over
samples, statistics, and the bench against peer metrics."""
