"""One module per report section, each declaring its ``SPEC`` (see ``..spec``); ``..registry`` lists them."""
