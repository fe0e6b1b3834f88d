"""The parts of a synthetic access log: when requests arrive (:mod:`.profile`), what they ask
for (:mod:`.site`), who sends them (:mod:`.clients`) and how a line is written
(:mod:`.render`). :mod:`iowatt.trace.generate` puts them together."""
