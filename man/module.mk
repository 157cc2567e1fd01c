# man/ — the manual pages, installed under share/man.
INSTALL_FILES += man/libtiermem.7:share/man/man7/libtiermem.7 man/tiermem-stat.1:share/man/man1/tiermem-stat.1 \
                 man/tiermem-llm.1:share/man/man1/tiermem-llm.1
