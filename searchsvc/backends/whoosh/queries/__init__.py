"""The product's query tree compiled into Whoosh queries, with wildcard and fuzzy words expanded."""
