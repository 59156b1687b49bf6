#ifndef DOCCACHE_CLEVELDB_SHIM_H
#define DOCCACHE_CLEVELDB_SHIM_H
// The LevelDB C API as shipped by libleveldb-dev (Debian) and `brew install leveldb`.
#include <leveldb/c.h>
#endif
