# cmake -DSRC=python/trainprof -DDST=build/python/trainprof -DCLI=path -P mirror_package.cmake
# Copies every .py under SRC to DST (changed files only) and links the CLI
# as DST/bin/trainprof, so DST's parent is an importable package root.
file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/*.py ${SRC}/py.typed)
foreach(f ${files})
  if(NOT f MATCHES "__pycache__")
    configure_file(${SRC}/${f} ${DST}/${f} COPYONLY)
  endif()
endforeach()
file(MAKE_DIRECTORY ${DST}/bin)
file(CREATE_LINK ${CLI} ${DST}/bin/trainprof SYMBOLIC)
