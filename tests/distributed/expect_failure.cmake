# Runs COMMAND (a ;-list) and passes only if it fails (non-zero exit) within SECONDS and its
# output matches EXPECT: a faulty rank must end the job with a clear error, not hang it.
#   cmake -DCOMMAND="mpiexec;-np;2;probe;throw" -DEXPECT="regex" -DSECONDS=30 -P expect_failure.cmake
string(TIMESTAMP start "%s")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT ${SECONDS})
string(TIMESTAMP stop "%s")
math(EXPR took "${stop} - ${start}")
message("exit: ${result} after ${took} s\n--- stdout\n${out}\n--- stderr\n${err}")
if(result MATCHES "timeout" OR result MATCHES "Process terminated")
  message(FATAL_ERROR "the job did not end within ${SECONDS} s: a failed rank left the others hanging")
endif()
if(result EQUAL 0)
  message(FATAL_ERROR "the job succeeded, but a rank failed on purpose: the failure went unnoticed")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the job's output does not say what failed (expected /${EXPECT}/)")
endif()
