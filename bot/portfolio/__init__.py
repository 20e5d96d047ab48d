"""portfolio"""
