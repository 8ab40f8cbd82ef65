"""The pdb process: a session driving it and the inspection of frames."""
