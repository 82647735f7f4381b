//! sfc: see the module of the same name in python/ordcore/ for the public contract.
