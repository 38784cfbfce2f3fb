// The translation unit that builds the test binaries' shared precompiled header
// (tests/CMakeLists.txt, corvid_test_pch); it has no code of its own.
