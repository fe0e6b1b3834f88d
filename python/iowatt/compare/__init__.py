"""Comparing runs across environments: statistics, tail fractions and the latent
performance effect."""
