"""File trees shared without their names: a metadata snapshot with keyed-hash names, and its
recreation elsewhere with the same structure, sizes, links and times."""
