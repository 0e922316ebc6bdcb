"""clusterbench: reproduce the tables of recent clustering papers, with our numbers beside theirs."""

__version__ = "0.1.0"
