"""Jobs that tie the layers together: one increment (batch run or micro-batch) into the lake."""
