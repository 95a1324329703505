// aisrv tests — doctest main for unit tests that need nothing from outside the repository.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
