/* placeholder: replaced by the real main */
int main(void) { return 0; }
