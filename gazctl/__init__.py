"""gazctl: the operator's command line. A thin Typer layer over `gazette_core`."""
