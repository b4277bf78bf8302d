def main(): print("w2c-tui")
