# RECUR_SANITIZE=ON instruments everything built here with ASan and UBSan; CI runs the
# suite once this way. UBSan findings abort so that they fail the test that caused them.
if(RECUR_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
endif()
